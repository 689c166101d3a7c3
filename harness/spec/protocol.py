"""How a cell is timed (:class:`Protocol`) and what the host offers (:class:`Platform`). Pure data."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from harness.errors import require
from harness.spec.ports import LOOPBACK, PORT_SCOPES, PortScope

BUSY_SHARE = 0.5
"""A run stops when another program (or the hypervisor) has disturbed more than this share of its
blocks after its first 8 (:mod:`harness.launch.sweep.budget`): its ratios would rest on what is left, and
the machine is not the user's to measure on right now."""
BUSY_MIN_BLOCKS = 8
"""Blocks a run measures before it judges the share (two instances of the default sweep)."""


DEFAULT_MIN_EFFECT = 0.05
"""The smallest relative change a verdict calls unless told otherwise (5%): equivalence is a CI
inside [1/1.05, 1.05]."""


@dataclass(frozen=True)
class Protocol:
    """How each cell is timed (docs/explanation/measurement.md; the statistics:
    docs/explanation/statistics.md; each field in words, with its unit and its ``run`` flag:
    :data:`SETTINGS`).

    A run in passes (a real cluster, ``--sweep collectives``) measures a cell in ``processes``
    independent passes, each process timing ``warmup_windows`` untimed and ``repeats`` timed windows of
    about ``window_s`` seconds (at least ``min_window_steps`` updates). ``peak``: the run's matmul peak
    in processes of its own (for mfu). ``breakdown``: the update's parts (:mod:`harness.worker.breakdown`;
    a run in turns: after its turns, :mod:`harness.launch.instances.breakdowns`).

    A local run measures in turns (:mod:`harness.launch.instances.turns`): ``max_live`` (0: from the machine's
    memory), ``turn_s``, ``blocks`` per instance, ``processes`` to ``max_processes`` instances a group,
    ``budget_min``. 6 blocks an instance: the spread between instances (about 3 % of log ratio here) is
    that of the mean of 6 blocks (4-10 % a block), so more instances, not blocks, buy precision."""

    repeats: int = 5
    window_s: float = 1.0
    warmup_windows: int = 1
    min_window_steps: int = 10
    cell_timeout_s: float = 600.0
    rendezvous_timeout_s: float = 120.0
    seed: int = 0
    processes: int = 3
    max_processes: int = 40
    unstable_cv: float = 0.10
    peak: bool = True
    breakdown: bool = True
    breakdown_named: bool = False
    """With ``breakdown`` off: time the step breakdown of the cells the answer names (each model's
    leader and closest rival, :meth:`harness.launch.sweep.budget.TurnsRun.named`), after the turns."""
    turn_s: float = 0.2
    blocks: int = 6
    budget_min: float = 10.0
    max_live: int = 0
    worker_memory_gib: float = 0.0
    """Cap on each worker's private memory (GiB, ``RLIMIT_DATA``): past it TensorFlow's allocations
    fail, and the cell's row says which tensor did not fit, instead of the kernel killing the
    worker, or the machine; 0: no cap."""
    fork: bool = True
    """Local runs: fork each worker from a server that has imported TensorFlow (about 3 s of
    CPU less per process; :mod:`harness.contract.forks`); False: a fresh interpreter each."""
    min_effect: float = DEFAULT_MIN_EFFECT
    """``run --min-effect``: the smallest relative change a ratio's verdict calls (higher, lower),
    and the band of equivalence, [1/(1 + F), 1 + F] (a fraction)."""
    busy_ok: bool = False
    """A local run goes on when another program disturbs most of its blocks (:data:`BUSY_SHARE`);
    False: it stops at once, saying which program, with every row measured before kept."""

    @property
    def budget_s(self) -> float:
        """The run's budget in seconds."""
        return self.budget_min * 60.0

    def __post_init__(self) -> None:
        require(
            {
                "--" + name.replace("_", "-"): (
                    getattr(self, name),
                    rule(getattr(self, name), self),
                    accepted.format(processes=self.processes),
                )
                for name, rule, accepted in _PROTOCOL_RULES
            }
        )


_INF = float("inf")
_PROTOCOL_RULES: tuple[tuple[str, Callable[[Any, Protocol], bool], str], ...] = (
    ("repeats", lambda v, _: v >= 2, "an integer of at least 2 (a CI needs two windows)"),
    ("window_s", lambda v, _: 0 < v < 3600, "seconds, more than 0 and less than 3600"),
    ("warmup_windows", lambda v, _: v >= 0, "an integer >= 0"),
    ("min_window_steps", lambda v, _: v >= 1, "an integer >= 1"),
    ("cell_timeout_s", lambda v, _: 0 < v < _INF, "seconds > 0"),
    ("rendezvous_timeout_s", lambda v, _: 0 < v < _INF, "seconds > 0"),
    ("seed", lambda v, _: v >= 0, "an integer >= 0"),
    ("processes", lambda v, _: v >= 1, "an integer of at least 1 (3 or more for a CI that covers re-runs)"),
    ("max_processes", lambda v, p: v >= p.processes, "an integer of at least --processes ({processes})"),
    ("turn_s", lambda v, _: 0 < v < 60, "seconds, more than 0 and less than 60"),
    ("blocks", lambda v, _: v >= 1, "an integer >= 1"),
    ("budget_min", lambda v, _: 0 < v < _INF, "minutes > 0 (every group still gets --processes instances)"),
    (
        "max_live",
        lambda v, _: v == 0 or 2 <= v <= 64,
        "0 (from the machine's memory) or an integer from 2 to 64",
    ),
    ("worker_memory_gib", lambda v, _: v == 0 or 0.5 <= v < _INF, "GiB: 0 (no cap) or at least 0.5"),
    ("min_effect", lambda v, _: 0 < v < 1, "a fraction in (0, 1), e.g. 0.05 for 5%"),
    ("unstable_cv", lambda v, _: 0 < v < _INF, "a coefficient of variation > 0, e.g. 0.1"),
)
"""Each :class:`Protocol` field checked, in order: (field, whether a value is accepted given the
protocol, the accepted values in words); its ``run`` flag is the field, dashed."""


ALWAYS, TURNS, PASSES, NEVER = "always", "turns", "passes", "never"
"""When a :class:`Setting` is in the "how it measures" table: every run; a local run, measured in
turns; a run measured in passes (a real cluster, ``--sweep collectives``); never (users do not set
it: the setting's ``why`` says why)."""


@dataclass(frozen=True)
class Setting:
    """One :class:`Protocol` field as a TensorFlow user reads it: words, unit and the ``run`` flag
    (``list`` and every dry run print them as the "how it measures" table). ``unit``: ``min``, ``s``,
    ``GiB``, ``%`` (a fraction shown as a percentage), ``yes/no`` (a switch) or empty (a count);
    ``zero``: what 0 stands for where it is special ("from free memory"); ``negatable``: argparse also
    takes ``--no-`` + the flag, the one shown when the switch is on."""

    field: str
    words: str
    flag: str = ""
    """The ``run`` flag; empty: the field, dashed (``--max-live``)."""
    unit: str = ""
    zero: str = ""
    negatable: bool = False
    shown: str = ALWAYS
    why: str = ""
    """Why a field that is never shown is left out (empty for the others)."""
    dest: str = ""
    """The ``run`` option's destination where it is not :attr:`field` (``--no-breakdown`` turns
    ``breakdown_named`` off too)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "flag", self.flag or "--" + self.field.replace("_", "-"))

    def value(self, protocol: Protocol) -> str:
        """The field's value in ``protocol``, with its unit."""
        v = getattr(protocol, self.field)
        if self.unit == "yes/no":
            return "yes" if v else "no"
        if v == 0 and self.zero:
            return self.zero
        if self.unit == "%":
            return f"{v * 100:g}%"
        return f"{v:g} {self.unit}" if self.unit else f"{v:g}"

    def flag_for(self, protocol: Protocol) -> str:
        """The flag that changes the field from its value in ``protocol``; empty for a switch that
        only one flag sets, already set so (``--no-peak`` where the sweep has no peak)."""
        on = bool(getattr(protocol, self.field))
        if self.negatable:
            return "--no-" + self.flag.removeprefix("--") if on else self.flag
        if self.unit == "yes/no" and on == (not self.flag.startswith("--no-")):
            return ""
        return self.flag


SETTINGS: tuple[Setting, ...] = (
    Setting("budget_min", "time budget for the whole run", unit="min", shown=TURNS),
    Setting("processes", "fresh processes per configuration, at least"),
    Setting("max_processes", "fresh processes per configuration, at most"),
    Setting(
        "max_live", "processes alive at once in a comparison, at most", zero="from free memory", shown=TURNS
    ),
    Setting("turn_s", "one turn: a timed window with the whole machine", unit="s", shown=TURNS),
    Setting("blocks", "blocks per instance, two turns each per configuration", shown=TURNS),
    Setting("window_s", "one timed window, about", unit="s", shown=PASSES),
    Setting("repeats", "timed windows per process", shown=PASSES),
    Setting("min_effect", "smallest difference called higher or lower", unit="%"),
    Setting("unstable_cv", "unstable when processes disagree by more than", unit="%"),
    Setting("cell_timeout_s", "a process is stopped after", unit="s"),
    Setting("peak", "measure the machine's matmul peak (for MFU)", "--no-peak", unit="yes/no"),
    Setting(
        "breakdown", "time the parts of an update (compute, all-reduce, input)", unit="yes/no", negatable=True
    ),
    Setting(
        "breakdown_named",
        "time the parts of an update of the leader and its closest rival",
        "--no-breakdown",
        unit="yes/no",
        dest="breakdown",
    ),
    Setting("worker_memory_gib", "memory cap of each worker process", unit="GiB", zero="no cap"),
    Setting("busy_ok", "go on when other programs disturb most turns", unit="yes/no", shown=TURNS),
    Setting(
        "warmup_windows",
        "untimed windows before the timed ones",
        shown=NEVER,
        why="after the first call and the calibration one warm-up window is enough; a check of the "
        "protocol, not a choice a run makes",
    ),
    Setting(
        "min_window_steps",
        "fewest updates in a window",
        shown=NEVER,
        why="a floor for very slow updates; a window's length follows --turn-s (--window-s)",
    ),
    Setting(
        "rendezvous_timeout_s",
        "time for every worker of a multi-worker configuration to join",
        unit="s",
        shown=NEVER,
        why="only a slow real cluster needs more than the default",
    ),
    Setting(
        "seed",
        "seed of the weights and the data",
        shown=NEVER,
        why="speed does not depend on it; fixed so that runs train the same numbers",
    ),
    Setting(
        "fork",
        "fork workers from a server that has imported TensorFlow",
        "--no-fork",
        unit="yes/no",
        shown=NEVER,
        why="only for checking that forking changes no figure",
    ),
)
"""Every :class:`Protocol` field in words, in the order the table shows them (a test checks that
each field has one, and that each flag is one ``run`` takes)."""


def settings_rows(protocol: Protocol, turns: bool = True) -> list[tuple[str, str, str]]:
    """(words, value, flag) of each setting shown for a run measured in turns (``turns``) or in
    passes (a real cluster, ``--sweep collectives``)."""
    mode = TURNS if turns else PASSES
    return [(s.words, s.value(protocol), s.flag_for(protocol)) for s in SETTINGS if s.shown in (ALWAYS, mode)]


DEVICE_KINDS = ("cpu", "gpu")

BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16", "svebf16")
"""CPU flags that show bfloat16 units: AMX and AVX-512 BF16 on x86 (``/proc/cpuinfo`` flags), BF16
and SVE BF16 on Arm (its ``Features``). oneDNN runs bfloat16 matmuls and convolutions on them; a
CPU without them emulates bfloat16, slower than float32."""


def bf16_units(flags: Iterable[str]) -> tuple[str, ...]:
    """The flags among ``flags`` that show bfloat16 units (:data:`BF16_FLAGS`, in its order)."""
    have = set(flags)
    return tuple(f for f in BF16_FLAGS if f in have)


def bf16_reason(units: tuple[str, ...], raced: bool | None = None) -> str:
    """Why mixed bfloat16 is among a CPU's contenders or not, from its :func:`bf16_units`;
    ``raced``: whether a run's configurations include it (None: the plan, which races it where the
    CPU has the units)."""
    raced = bool(units) if raced is None else raced
    if units:
        have = f"this CPU reports bfloat16 units ({', '.join(units)})"
        return have + (
            ", so mixed bfloat16 is raced" if raced else ", but nothing here trained in mixed bfloat16"
        )
    have = f"this CPU reports no bfloat16 units (none of {', '.join(BF16_FLAGS)})"
    return have + (": mixed bfloat16 is emulated here, slower" if raced else ", so float32 alone is raced")


MAX_CPU_DEVICES = 256
"""Most logical CPU devices a CPU-only host may split into (``--cpu-devices``): far past any host's
cores, and a bound that keeps ``--replicas 1..max`` a list one can plan."""


@dataclass(frozen=True)
class LogicalGpus:
    """Logical GPUs carved from each physical one a process uses: ``per_gpu`` of them, each
    limited to ``memory_mib`` MiB."""

    per_gpu: int
    memory_mib: int


MAX_LOGICAL_GPUS = 8
"""Most logical GPUs one GPU is split into (``--replicas`` above the GPU count)."""

GPU_MEMORY_SHARE = 0.9
"""The part of a GPU's memory its logical GPUs share: the rest is left to the CUDA context and
cuDNN's workspaces, which a logical device's limit does not cover."""


@dataclass(frozen=True)
class Platform:
    """What the host offers, as known without TensorFlow: ``cpu_devices``, the logical CPU devices a
    CPU-only host may split into; ``gpu_ids``, what ``CUDA_VISIBLE_DEVICES`` calls each usable GPU
    (MIG instances: UUIDs; empty: 0..gpu_count-1); ``mig``, CUDA shows a process one instance only;
    ``shared_host``, a multi-worker cell's tasks share this host's GPUs (local clusters; not a real one)."""

    device_kind: str = "cpu"
    gpu_count: int = 0
    cpu_devices: int = 2
    gpu_ids: tuple[str, ...] = ()
    mig: bool = False
    shared_host: bool = True
    frameworks: tuple[str, ...] = ()
    """The co-tenant frameworks installed where the workers run (``--tenant-framework``'s values
    that can run: :data:`harness.spec.frameworks.FRAMEWORKS`)."""
    gpu_memory_mib: int = 0
    """Memory of the smallest usable GPU, MiB (``nvidia-smi``; 0: unknown, so no GPU is split into
    logical ones)."""
    cpu_bf16: tuple[str, ...] = ()
    """The host CPU's flags that show bfloat16 units (:func:`bf16_units`); empty: none."""
    ports: str = LOOPBACK.name
    """Where a local cluster's TensorFlow servers can be reached from: a name in
    :data:`harness.spec.ports.PORT_SCOPES` (chosen once per run from what the machine allows
    and ``--open-ports``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "frameworks", tuple(self.frameworks))
        object.__setattr__(self, "cpu_bf16", tuple(self.cpu_bf16))
        require(
            {
                "device kind": (
                    self.device_kind,
                    self.device_kind in DEVICE_KINDS,
                    f"one of {', '.join(DEVICE_KINDS)}",
                ),
                "GPU count": (self.gpu_count, self.gpu_count >= 0, "an integer >= 0"),
                "--cpu-devices": (
                    self.cpu_devices,
                    1 <= self.cpu_devices <= MAX_CPU_DEVICES,
                    f"an integer from 1 to {MAX_CPU_DEVICES}",
                ),
                "port scope": (self.ports, self.ports in PORT_SCOPES, f"one of {', '.join(PORT_SCOPES)}"),
            }
        )

    @property
    def port_scope(self) -> PortScope:
        """Where a local cluster's servers can be reached from (:mod:`harness.spec.ports`)."""
        return PORT_SCOPES[self.ports]

    @property
    def devices(self) -> int:
        """Whole devices one process can use: every GPU (one MIG instance), or the logical CPU
        devices of a CPU-only host."""
        if self.device_kind == "gpu":
            return min(self.gpu_count, 1) if self.mig else self.gpu_count
        return self.cpu_devices

    @property
    def max_replicas(self) -> int:
        """Devices one process can use: every GPU (one MIG instance), up to
        :data:`MAX_LOGICAL_GPUS` logical ones on each where its memory is known; or the logical CPU
        devices."""
        if self.device_kind == "gpu" and not self.mig and self.gpu_memory_mib:
            return self.devices * MAX_LOGICAL_GPUS
        return self.devices

    def logical_gpus(self, replicas: int) -> LogicalGpus | None:
        """How one process's ``replicas`` use the GPUs: None with a GPU each (or no GPU); else
        ``per_gpu`` logical GPUs on each GPU it needs, each limited to an equal share of
        :data:`GPU_MEMORY_SHARE` of its memory (``tf.config.set_logical_device_configuration``)."""
        if self.device_kind != "gpu" or self.mig or replicas <= self.gpu_count or not self.gpu_memory_mib:
            return None
        per_gpu = -(-replicas // self.gpu_count)
        return LogicalGpus(per_gpu, int(self.gpu_memory_mib * GPU_MEMORY_SHARE) // per_gpu)

    def gpu_id(self, index: int) -> str:
        """The ``CUDA_VISIBLE_DEVICES`` entry of usable GPU ``index``."""
        return self.gpu_ids[index] if self.gpu_ids else str(index)
