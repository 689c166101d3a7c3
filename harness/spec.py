"""Cells, sweeps and their validation: pure data and pure functions, no TensorFlow.

A :class:`Cell` is one fully specified measurement. A :class:`Sweep` is a named grid of axis values
expanded by :func:`expand`. Bad user input raises :class:`SpecError` naming the value and the accepted
ones; a combination TensorFlow cannot run correctly on this :class:`Platform` is kept and explained by
:func:`unsupported_reason`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


class SpecError(ValueError):
    """A user-supplied value that the suite does not accept. The message names value and choices."""


# --------------------------------------------------------------------------------------------------
# Axes
# --------------------------------------------------------------------------------------------------

REPLICAS_TO_MAX = "1..max"
"""Replica-axis token meaning every count from 1 to :attr:`Platform.max_replicas`."""


@dataclass(frozen=True)
class Axis:
    """One axis of the cell grid, as the CLI and the sweeps see it.

    ``choices`` lists the accepted values of a string axis; integer axes accept ``minimum..maximum``.
    ``applies_to`` names the strategies the axis means something for; elsewhere it collapses to
    ``inapplicable`` (e.g. cross-device ops exist only for mirrored).
    """

    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: int = 1
    maximum: int | None = None
    applies_to: tuple[str, ...] = ()
    inapplicable: Any = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> tuple[Any, ...]:
        """Parse a comma list given on the command line; raise SpecError on any bad item."""
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise SpecError(f"{self.flag} needs at least one value; received {text!r}. {self.accepted()}")
        return tuple(self.check(self._convert(t)) for t in items)

    def _convert(self, token: str) -> Any:
        if self.kind is int and not (self.name == "replicas" and token in (REPLICAS_TO_MAX, "max")):
            try:
                return int(token)
            except ValueError:
                raise SpecError(f"Received {self.flag}={token!r}; {self.accepted()}") from None
        return token

    def check(self, value: Any) -> Any:
        """Return ``value`` if accepted, else raise SpecError naming it and the accepted values."""
        if self.kind is int:
            if self.name == "replicas" and value in (REPLICAS_TO_MAX, "max"):
                return REPLICAS_TO_MAX
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= self.minimum
            ok = ok and (self.maximum is None or value <= self.maximum)
        else:
            ok = value in self.choices
        if not ok:
            raise SpecError(f"Received {self.flag}={value!r}; {self.accepted()}")
        return value

    def accepted(self) -> str:
        if self.kind is int:
            hi = "" if self.maximum is None else f" and at most {self.maximum}"
            extra = f", or {REPLICAS_TO_MAX!r}" if self.name == "replicas" else ""
            return f"expected integers of at least {self.minimum}{hi}{extra}."
        return "expected one of: " + ", ".join(self.choices) + "."


MODEL_NAMES = ("cnn", "dense")
DATA_NAMES = ("synthetic", "mnist")
SINGLE_PROCESS_STRATEGIES = ("default", "one_device", "mirrored", "central_storage")
PARAMETER_SERVER = "parameter_server"
MULTI_WORKER_STRATEGIES = ("multi_worker_mirrored", PARAMETER_SERVER)
"""Strategies whose cells run as several processes on TensorFlow's cluster runtime (TF_CONFIG)."""
STRATEGY_NAMES = SINGLE_PROCESS_STRATEGIES + MULTI_WORKER_STRATEGIES
CROSS_DEVICE_OPS_NAMES = ("auto", "nccl", "hierarchical_copy", "reduction_to_one_device")
COMMUNICATION_NAMES = ("auto", "ring", "nccl")
LOOP_NAMES = ("ctl", "fit")
PRECISION_NAMES = ("float32", "mixed_bfloat16", "mixed_float16")
SCALING_NAMES = ("weak", "strong")

AXES: tuple[Axis, ...] = (
    Axis("model", str, "cnn", "model to train", MODEL_NAMES),
    Axis("data", str, "synthetic", "synthetic (fixed-seed MNIST-shaped pool) or the real MNIST file",
         DATA_NAMES),
    Axis("strategy", str, "mirrored", "tf.distribute strategy", STRATEGY_NAMES),
    Axis("cross_device_ops", str, "auto", "all-reduce implementation of MirroredStrategy",
         CROSS_DEVICE_OPS_NAMES, applies_to=("mirrored",), inapplicable="none"),
    Axis("communication", str, "auto", "collective implementation of MultiWorkerMirroredStrategy",
         COMMUNICATION_NAMES, applies_to=("multi_worker_mirrored",), inapplicable="none"),
    Axis("replicas", int, 1, "replicas per worker (GPUs, or logical CPU devices without a GPU)",
         applies_to=("mirrored", "central_storage", *MULTI_WORKER_STRATEGIES), inapplicable=1),
    Axis("workers", int, 1, "worker processes, each on 127.0.0.1 with its own TF_CONFIG",
         applies_to=MULTI_WORKER_STRATEGIES, inapplicable=1),
    Axis("ps", int, 1, "parameter-server processes holding the variables (parameter_server)",
         applies_to=(PARAMETER_SERVER,), inapplicable=0),
    Axis("batch", int, 64, "batch size in examples: per replica (weak scaling) or global (strong)"),
    Axis("accum_steps", int, 1, "micro-batches whose gradients each replica sums before one "
         "all-reduce and one optimizer update"),
    Axis("loop", str, "ctl", "training loop: ctl = strategy.run inside an in-graph tf.function loop; "
         "fit = Keras model.fit with the suite's train step", LOOP_NAMES),
    Axis("steps_per_execution", int, 10, "optimizer updates per tf.function call"),
    Axis("precision", str, "float32", "Keras dtype policy", PRECISION_NAMES),
    Axis("scaling", str, "weak", "weak: batch is per replica; strong: batch is global", SCALING_NAMES),
    Axis("tenants", int, 1, "independent training processes of this cell at once on the same "
         "devices (co-tenancy); the row's throughput is their sum", maximum=16,
         applies_to=SINGLE_PROCESS_STRATEGIES, inapplicable=1),
)
AXIS_BY_NAME: dict[str, Axis] = {a.name: a for a in AXES}


# --------------------------------------------------------------------------------------------------
# Cell, protocol, platform
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One fully specified measurement. ``batch`` is per replica (weak) or global (strong), examples."""

    model: str = "cnn"
    data: str = "synthetic"
    strategy: str = "mirrored"
    cross_device_ops: str = "auto"
    communication: str = "auto"
    replicas: int = 1
    workers: int = 1
    ps: int = 1
    batch: int = 64
    accum_steps: int = 1
    loop: str = "ctl"
    steps_per_execution: int = 10
    precision: str = "float32"
    scaling: str = "weak"
    tenants: int = 1

    def __post_init__(self) -> None:
        """Collapse axes that mean nothing here, so equal measurements have equal ids: cross-device
        ops exist only for mirrored, replicas only for multi-device strategies, and on one device
        weak and strong scaling are the same measurement."""
        for axis in AXES:
            if axis.applies_to and self.strategy not in axis.applies_to:
                object.__setattr__(self, axis.name, axis.inapplicable)
        if self.devices == 1:
            object.__setattr__(self, "scaling", "weak")

    @property
    def devices(self) -> int:
        """Replicas in sync across all workers."""
        return self.replicas * self.workers

    @property
    def processes(self) -> int:
        """Processes the cell runs as: a coordinator, the workers and the ps tasks under
        parameter_server; one per worker otherwise."""
        return self.workers + self.ps + 1 if self.strategy == PARAMETER_SERVER else self.workers

    @property
    def replicas_in_sync(self) -> int:
        """Replicas that share each optimizer update: every device, except under parameter_server,
        where each worker updates the variables on its own (asynchronously) with its own replicas."""
        return self.replicas if self.strategy == PARAMETER_SERVER else self.devices

    @property
    def global_batch(self) -> int:
        """Examples per micro-step across all replicas and workers (under parameter_server: one
        update on every worker)."""
        return self.batch if self.scaling == "strong" else self.batch * self.devices

    @property
    def effective_batch(self) -> int:
        """Examples per optimizer update: per_replica_batch x replicas_in_sync x accum_steps
        (= global_batch x accum_steps for synchronous strategies)."""
        if self.strategy == PARAMETER_SERVER:
            return self.per_replica_batch * self.replicas_in_sync * self.accum_steps
        return self.global_batch * self.accum_steps

    @property
    def per_replica_batch(self) -> int:
        """Examples per replica per micro-step (floor for a strong batch that does not divide)."""
        return self.batch // self.devices if self.scaling == "strong" else self.batch

    @property
    def id(self) -> str:
        """Stable readable id, e.g. ``cnn/mirrored[auto]/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak``.

        The batch part is ``b<per-replica batch>`` for weak scaling, ``gb<global batch>`` for strong.
        Parameter-server cells add their ps count to the topology: ``r1w2p1``; co-tenant cells
        their tenant count: ``r2w1t2``.
        """
        strategy = self.strategy
        for option in (self.cross_device_ops, self.communication):
            if option != "none":
                strategy += f"[{option}]"
        return "/".join((
            self.model, strategy, self._topology_id(), self._batch_id(),
            f"acc{self.accum_steps}", self.loop, f"spe{self.steps_per_execution}", self.precision,
            self.data, self.scaling,
        ))

    def _topology_id(self) -> str:
        return (f"r{self.replicas}w{self.workers}" + (f"p{self.ps}" if self.ps else "")
                + (f"t{self.tenants}" if self.tenants > 1 else ""))

    def _batch_id(self) -> str:
        """``b<per-replica batch>``, or ``gb<global batch>`` for strong scaling (unique either way)."""
        return f"gb{self.batch}" if self.scaling == "strong" else f"b{self.batch}"

    @property
    def topology(self) -> tuple[int, int]:
        """(workers, replicas, tenants): cells run in this order, 1-device cells (the baselines)
        first, each alone before it shares its devices."""
        return (self.workers, self.replicas, self.tenants)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Cell":
        """From :meth:`to_dict` output; axes added later take their defaults."""
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


@dataclass(frozen=True)
class Protocol:
    """How each cell is timed (DESIGN.md section 3).

    After a first call (``compile_s``), the window length is calibrated to about ``window_s`` seconds
    (a multiple of steps_per_execution, at least ``min_window_steps`` updates); then
    ``warmup_windows`` untimed and ``repeats`` timed windows run back to back, each ending in a host
    sync.
    """

    repeats: int = 5
    window_s: float = 1.0
    warmup_windows: int = 1
    min_window_steps: int = 10
    cell_timeout_s: float = 600.0
    rendezvous_timeout_s: float = 120.0
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "repeats": self.repeats >= 2, "window_s": 0 < self.window_s < 3600,
            "warmup_windows": self.warmup_windows >= 0, "min_window_steps": self.min_window_steps >= 1,
            "cell_timeout_s": 0 < self.cell_timeout_s < float("inf"),
            "rendezvous_timeout_s": 0 < self.rendezvous_timeout_s < float("inf"), "seed": self.seed >= 0,
        }
        accepted = {
            "repeats": "an integer of at least 2 (a CI needs two windows)",
            "window_s": "seconds, more than 0 and less than 3600",
            "warmup_windows": "an integer >= 0", "min_window_steps": "an integer >= 1",
            "cell_timeout_s": "seconds > 0", "rendezvous_timeout_s": "seconds > 0",
            "seed": "an integer >= 0",
        }
        for name, ok in checks.items():
            if not ok:
                raise SpecError(f"Received --{name.replace('_', '-')}={getattr(self, name)!r}; "
                                f"expected {accepted[name]}.")


@dataclass(frozen=True)
class Platform:
    """What the host offers, as known without TensorFlow.

    ``cpu_devices`` is how many logical CPU devices a CPU-only host may split into for replicas.
    """

    device_kind: str = "cpu"
    gpu_count: int = 0
    cpu_devices: int = 2

    @property
    def max_replicas(self) -> int:
        return self.gpu_count if self.device_kind == "gpu" else self.cpu_devices


# --------------------------------------------------------------------------------------------------
# Sweeps and expansion
# --------------------------------------------------------------------------------------------------


def _default_axis_values() -> dict[str, tuple[Any, ...]]:
    return {a.name: (a.default,) for a in AXES}


Grid = tuple[tuple[str, tuple[Any, ...]], ...]
"""Axis name -> values; axes left out take their default. Its cells are the product."""


@dataclass(frozen=True)
class Sweep:
    """A named union of grids (usually one); the cell set is the union of their products."""

    name: str
    description: str
    grids: tuple[Grid, ...] = ((),)
    protocol: Protocol = field(default_factory=Protocol)

    def grid_values(self) -> list[dict[str, tuple[Any, ...]]]:
        """Every axis's values, grid by grid (defaults filled in)."""
        return [{**_default_axis_values(), **dict(grid)} for grid in self.grids]

    def values(self) -> dict[str, tuple[Any, ...]]:
        """Every value each axis takes in any grid, in first-seen order."""
        merged: dict[str, tuple[Any, ...]] = {}
        for grid in self.grid_values():
            for name, vals in grid.items():
                merged[name] = tuple(dict.fromkeys((*merged.get(name, ()), *vals)))
        return merged

    def with_axes(self, overrides: dict[str, tuple[Any, ...]]) -> "Sweep":
        """A copy with some axes replaced in every grid (the CLI's explicit axis flags)."""
        grids = tuple(tuple({**dict(g), **overrides}.items()) for g in self.grids)
        return dataclasses.replace(self, grids=tuple(dict.fromkeys(grids)))


def _check_axes(axes: dict[str, Sequence[Any]]) -> Grid:
    checked: list[tuple[str, tuple[Any, ...]]] = []
    for axis_name, values in axes.items():
        if axis_name not in AXIS_BY_NAME:
            raise SpecError(f"Unknown axis {axis_name!r}; expected one of: {', '.join(AXIS_BY_NAME)}.")
        axis = AXIS_BY_NAME[axis_name]
        checked.append((axis_name, tuple(axis.check(v) for v in values)))
    return tuple(checked)


def make_sweep(name: str, description: str, protocol: Protocol | None = None,
               **axes: Sequence[Any]) -> Sweep:
    """A one-grid Sweep from keyword axes, checking every value (SpecError on a bad one)."""
    return Sweep(name, description, (_check_axes(axes),), protocol or Protocol())


def chain(name: str, description: str, protocol: Protocol | None, *parts: Sweep) -> Sweep:
    """The union of several sweeps' grids, as one named sweep."""
    return Sweep(name, description, tuple(g for p in parts for g in p.grids), protocol or Protocol())


def _replica_values(values: Iterable[Any], platform: Platform) -> list[int]:
    out: list[int] = []
    for v in values:
        out.extend(range(1, platform.max_replicas + 1) if v == REPLICAS_TO_MAX else [v])
    return out


def expand(sweep: Sweep, platform: Platform) -> list[Cell]:
    """Every distinct cell of the sweep, in a stable order (topologies grouped, 1 replica first).

    Axes that do not apply to a strategy collapse (see :meth:`Cell.__post_init__`), so ``default``
    with replicas ``1,2`` is one cell, not two. Nothing else is dropped: unsupported cells stay, to be reported.
    """
    names = [a.name for a in AXES]
    seen: dict[str, Cell] = {}
    for values in sweep.grid_values():
        values["replicas"] = tuple(_replica_values(values["replicas"], platform))
        for combo in itertools.product(*(values[n] for n in names)):
            cell = Cell(**dict(zip(names, combo)))
            seen.setdefault(cell.id, cell)
    order = {cell_id: i for i, cell_id in enumerate(seen)}
    return sorted(seen.values(), key=lambda c: (c.topology, order[c.id]))


# --------------------------------------------------------------------------------------------------
# Unsupported combinations: a registry of pure rules
# --------------------------------------------------------------------------------------------------

Rule = Callable[[Cell, Platform], "str | None"]


def _too_many_devices(cell: Cell, platform: Platform) -> str | None:
    if cell.replicas > platform.max_replicas:
        what = (f"{platform.gpu_count} GPU(s)" if platform.device_kind == "gpu"
                else f"{platform.cpu_devices} logical CPU devices (raise with --cpu-devices)")
        return f"needs {cell.replicas} replicas; this machine offers {what}"
    return None


def _nccl_on_cpu(cell: Cell, platform: Platform) -> str | None:
    if cell.cross_device_ops == "nccl" and platform.device_kind == "cpu":
        return ("NcclAllReduce has no CPU kernel: the first all-reduce fails with "
                "\"No OpKernel was registered to support Op 'NcclAllReduce'\"")
    return None


def _hierarchical_copy_odd(cell: Cell, platform: Platform) -> str | None:
    if cell.cross_device_ops == "hierarchical_copy" and cell.replicas > 1 and cell.replicas % 2:
        return (f"HierarchicalCopyAllReduce returns wrong sums with an odd replica count "
                f"({cell.replicas}): it drops the last replica (all-reduce of 1+2+3 gives 3)")
    return None


def _central_storage_fp16(cell: Cell, platform: Platform) -> str | None:
    if cell.strategy == "central_storage" and cell.precision == "mixed_float16":
        return "CentralStorageStrategy fails with the mixed_float16 loss-scale optimizer"
    return None


def _strong_batch_divides(cell: Cell, platform: Platform) -> str | None:
    if cell.scaling == "strong" and cell.batch % cell.devices:
        return (f"strong scaling: global batch {cell.batch} does not divide over "
                f"{cell.devices} replicas")
    return None


def _fit_collective_multi_step(cell: Cell, platform: Platform) -> str | None:
    if (cell.loop == "fit" and cell.strategy == "mirrored" and cell.cross_device_ops == "auto"
            and cell.replicas > 1 and cell.steps_per_execution > 1):
        return ("Keras fit with steps_per_execution > 1 runs each step under a tf.cond inside a "
                "while loop; MirroredStrategy's collective all-reduce there fails (\"You must feed a "
                "value for placeholder tensor ...cond/Placeholder\"): use steps_per_execution 1 or "
                "another cross-device op")
    return None


def _multi_worker_cpu_one_device(cell: Cell, platform: Platform) -> str | None:
    if cell.strategy in MULTI_WORKER_STRATEGIES and platform.device_kind == "cpu" and cell.replicas > 1:
        return (f"a CPU worker of {cell.strategy} uses exactly one device (logical CPU devices are "
                "ignored): use replicas 1 and more workers")
    return None


def _fit_multi_worker_mirrored(cell: Cell, platform: Platform) -> str | None:
    return ("Keras 3 fit fails under MultiWorkerMirroredStrategy (\"Attempt to convert a value "
            "(PerReplica...)\", keras#20585): use the ctl loop")


def _fit_parameter_server(cell: Cell, platform: Platform) -> str | None:
    return ("Keras 3 fit does not support ParameterServerStrategy (keras#18624): use the ctl loop, "
            "which schedules steps through tf.distribute.coordinator.ClusterCoordinator")


_FIT_UNSUPPORTED: dict[str, Rule] = {
    "multi_worker_mirrored": _fit_multi_worker_mirrored,
    PARAMETER_SERVER: _fit_parameter_server,
}


def _multi_worker_fit(cell: Cell, platform: Platform) -> str | None:
    rule = _FIT_UNSUPPORTED.get(cell.strategy)
    return rule(cell, platform) if rule and cell.loop == "fit" else None


def _nccl_communication_on_cpu(cell: Cell, platform: Platform) -> str | None:
    if cell.communication == "nccl" and platform.device_kind == "cpu":
        return "NCCL collectives need GPUs"
    return None


UNSUPPORTED_RULES: tuple[Rule, ...] = (
    _too_many_devices, _nccl_on_cpu, _hierarchical_copy_odd, _central_storage_fp16,
    _strong_batch_divides, _fit_collective_multi_step, _multi_worker_cpu_one_device,
    _multi_worker_fit, _nccl_communication_on_cpu,
)


def unsupported_reason(cell: Cell, platform: Platform) -> str | None:
    """Why TensorFlow cannot run ``cell`` correctly on ``platform``, or None if it can."""
    for rule in UNSUPPORTED_RULES:
        reason = rule(cell, platform)
        if reason:
            return reason
    return None
