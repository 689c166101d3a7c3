"""Doctor probes: ``python -m harness.worker.probe`` prints one JSON line per fact or probe; the
parent (:mod:`harness.launch.doctor`) reads them and :mod:`harness.analysis.doctor` renders them."""

from __future__ import annotations

from enum import StrEnum

from harness.spec.axes import AXIS_BY_NAME
from harness.spec.strategies import STRATEGIES, only_strategy

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


LOCAL_PROBES: tuple[tuple[str, str], ...] = (
    ("one_device", "-"),
    ("mirrored", "auto"),
    ("mirrored", "reduction_to_one_device"),
    ("mirrored", "hierarchical_copy"),
    ("central_storage", "-"),
    ("mirrored", "nccl"),  # last: a failed NCCL init may leave state behind
)
"""(strategy, cross-device op) of the single-process probes, in the order a probe process runs them."""

WORKER_PROBE_STRATEGY: str = only_strategy(lambda s: s.multi_worker and s.allreduce_check).name
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
