"""Doctor probes: ``python -m harness.worker.probe`` prints one JSON line per fact or probe; the
parent (:mod:`harness.launch.cells.doctor`) reads them and :mod:`harness.analysis.pages.doctor` renders them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from harness.spec.axes import AXIS_BY_NAME
from harness.spec.strategies import STRATEGIES, only_strategy


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on an NVIDIA GPU: GPU index, pid, memory (bytes; None if the
    driver does not say)."""

    gpu: int
    pid: int
    used_bytes: int | None


@dataclass(frozen=True)
class OsGpu:
    """One DRM card: its sysfs name (``card0``), PCI vendor (NVIDIA, AMD, Intel, or the raw id)
    and PCI address."""

    card: str
    vendor: str
    pci: str


PROBE_MODULE = "harness.worker.probe"


class ProbeStatus(StrEnum):
    """A probe's outcome."""

    WORKS = "works"
    """The all-reduce summed right."""
    UNSUPPORTED = "unsupported"
    """No kernel or device here (NCCL on CPU)."""
    FAILS = "fails"
    """It raised."""
    WRONG = "wrong result"
    """It ran and returned wrong sums."""
    SKIPPED = "not probed"
    """Not probed (too few cores for its workers)."""


@dataclass(frozen=True)
class Probe:
    """One strategy x cross-device op at one replica count: works, unsupported, fails or wrong
    result, with the reason and the op TensorFlow really used."""

    strategy: str
    cross_device_ops: str
    replicas: int
    status: str
    detail: str
    effective: str = ""
    workers: int = 1


@dataclass(frozen=True)
class Device:
    """A physical device TensorFlow lists: name, type (``GPU``, ``CPU``), model and vendor ("":
    unknown), compute capability (a GPU's ``[major, minor]``)."""

    name: str
    type: str
    model: str
    vendor: str
    compute_capability: list[int]


@dataclass(frozen=True)
class Build:
    """What the TensorFlow build drives (``tf.sysconfig.get_build_info``; None: it does not say)."""

    is_cuda_build: bool | None = None
    is_rocm_build: bool | None = None
    cuda_version: str | None = None
    cudnn_version: str | None = None
    rocm_version: str | None = None
    cuda_compute_capabilities: list[str] | None = None


@dataclass(frozen=True)
class Threads:
    """TensorFlow's intra- and inter-op threads (0: its default), the host's cores, the usable ones."""

    intra_op: int
    inter_op: int
    cores: int
    affinity: int


@dataclass(frozen=True)
class ProbeFacts:
    """The probe child's ``facts`` line: devices (logical: those configured, of ``logical_type``),
    versions, build, threads, memory growth by GPU, and the environment variables that steer them."""

    physical: list[Device]
    logical: list[str]
    logical_type: str
    tensorflow: str
    keras: str
    build: Build
    threads: Threads
    memory_growth: dict[str, bool]
    env: dict[str, str]

    @property
    def gpu_count(self) -> int:
        return sum(1 for d in self.physical if d.type == "GPU")


def parse(lines: list[dict[str, Any]]) -> tuple[ProbeFacts | None, list[Probe]]:
    """A probe process's JSON lines: its ``facts`` (None: it printed none) and its probes."""
    probes = [Probe(**{k: v for k, v in d.items() if k != "kind"}) for d in lines if d.get("kind") == "probe"]
    f = next((d for d in lines if d.get("kind") == "facts"), None)
    if f is None:
        return None, probes
    plain = {k: v for k, v in f.items() if k not in ("kind", "physical", "build", "threads")}
    physical = [Device(**d) for d in f["physical"]]
    return ProbeFacts(physical, build=Build(**f["build"]), threads=Threads(**f["threads"]), **plain), probes


LOCAL_PROBES: tuple[tuple[str, str], ...] = (
    ("one_device", "-"),
    ("mirrored", "auto"),
    ("mirrored", "reduction_to_one_device"),
    ("mirrored", "hierarchical_copy"),
    ("central_storage", "-"),
    ("mirrored", "nccl"),  # last: a failed NCCL init may leave state behind
)
"""(strategy, cross-device op) of the single-process probes, in the order a probe process runs them."""

WORKER_PROBE_STRATEGY: str = only_strategy(lambda s: s.multi_worker and s.synchronous).name
"""The strategy of the multi-worker probes: the multi-worker one whose all-reduce can be checked
(multi_worker_mirrored; parameter_server's coordinator runs no replica functions, and it needs a
cluster of servers)."""


def local_probes(replicas: int) -> list[tuple[str, str]]:
    """(strategy, cross-device op) probed with ``replicas`` devices: the one-device strategies only
    with one; with one device, a multi-device strategy only with its option axis's default op
    (TensorFlow skips the reduce of one value, so the ops do not differ there)."""
    return [(name, op) for name, op in LOCAL_PROBES if _probed(name, op, replicas)]


def _probed(name: str, op: str, replicas: int) -> bool:
    kind = STRATEGIES[name]
    if replicas > 1:
        return kind.multi_device
    return not kind.multi_device or (
        kind.option_axis is not None and op == AXIS_BY_NAME[kind.option_axis].default
    )
