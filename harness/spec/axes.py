"""The axes a cell is made of (:data:`AXES`: name, accepted values, default, how the command line
spells them), as pure data, no TensorFlow. Bad user input raises :class:`HarnessError` naming the
value and the accepted ones. A cell is :class:`harness.spec.cell.Cell`; a sweep of axis values is
:class:`harness.spec.sweep.Sweep`, expanded by :func:`harness.spec.sweep.expand`; a combination
TensorFlow cannot run is explained by :func:`harness.spec.rules.unsupported_reason`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from harness.errors import HarnessError
from harness.spec.frameworks import FRAMEWORKS, NONE
from harness.spec.models import LOSS_NAMES, MODEL_NAMES, MODEL_TITLES, parse_ref
from harness.spec.strategies import (
    MULTI_WORKER_STRATEGIES,
    NO_OPTION,
    SINGLE_PROCESS_STRATEGIES,
    STRATEGIES,
    STRATEGY_NAMES,
    strategies_where,
)

REPLICAS_TO_MAX = "1..max"
"""Replica-axis token meaning every count from 1 to :attr:`Platform.max_replicas`."""
REPLICAS_TO_DEVICES = "doubling"
"""Replica-axis token meaning 1, 2, 4, ... whole devices up to :attr:`Platform.devices`, and that
count itself (1, 2, 4, 8 on 8 GPUs; 1, 2, 3 on 3): every GPU, no logical ones (on a CPU-only host,
its logical CPU devices). The counts a user buys and compares, not every count between."""
REPLICA_TOKENS = {
    REPLICAS_TO_MAX: REPLICAS_TO_MAX,
    "max": REPLICAS_TO_MAX,
    REPLICAS_TO_DEVICES: REPLICAS_TO_DEVICES,
}
"""What the replica axis takes besides integers, and the token each means."""

AxisValue = int | str
"""One value of an axis: a name, an integer, or :data:`REPLICAS_TO_MAX` on the replica axis."""


BASELINE = "baseline"
"""What a row shares with its 1-device baseline (scaling efficiency); the batch is matched apart
(per replica for weak scaling, global for strong)."""
ALONE = "alone"
"""What a co-tenant cell shares with the same cell alone: every axis but the tenants."""
COMPUTES = "computes"
"""What decides the arithmetic two cells must agree on (``verify``), besides the effective batch
and its split."""


@dataclass(frozen=True)
class Axis:
    """One axis of the cell grid, as the CLI and the sweeps see it.

    ``choices`` lists the accepted values of a string axis; integer axes accept ``minimum..maximum``.
    ``applies_to`` names the strategies the axis means something for; elsewhere it collapses to
    ``inapplicable`` (e.g. cross-device ops exist only for mirrored)."""

    name: str
    kind: type[AxisValue]
    default: AxisValue
    help: str
    choices: tuple[str, ...] = ()
    minimum: int = 1
    maximum: int | None = None
    applies_to: tuple[str, ...] = ()
    inapplicable: AxisValue | None = None
    cli: str = ""
    """The command line's name for it where TensorFlow's differs from the axis's (``jit-compile``
    for ``xla``); empty: the name, dashed."""
    words: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """How a string value reads in a sentence for a TensorFlow user (``fit``: "Keras Model.fit");
    a value not listed reads as itself."""
    phrase: str = "{}"
    """How an integer value reads ("on {} replicas"); ``phrase_one`` for 1 where it differs."""
    phrase_one: str = ""
    plain: bool = True
    """Whether the default is the plain choice a description leaves unsaid (no accumulation, the
    custom loop, float32: :attr:`reference`); False: the value is always said where the axis applies."""
    essential: bool = False
    """Said in a whole description even at its reference value (the choices a user makes: loop,
    batch, accumulation, precision, XLA; :func:`harness.spec.words.describe`)."""
    row_field: str = ""
    """The cell row's column holding the value where it is not the axis's name (``batch``:
    ``per_replica_batch``)."""
    step_up: int = 0
    """The factor an integer value is multiplied by when a breakdown points to this axis as the
    next knob to try (0: not a knob to suggest)."""
    alternative: str = ""
    """The value a string axis suggests trying next from its reference ("" : none)."""
    always_named: bool = False
    """Named in every label that tells configurations apart (strategy, devices, co-tenants: they
    change what a figure means), and in every command that selects one (model, strategy)."""
    keys: frozenset[str] = frozenset({ALONE})
    """The identity keys the axis belongs to (:data:`BASELINE`, :data:`ALONE`, :data:`COMPUTES`):
    what two cells must share to be compared that way (every axis but the tenants is in ALONE)."""
    unit: str = ""
    """The unit of an integer value in the cells table (``devices``, ``processes``)."""
    column: str = ""
    """The cells table's description of the column (``results/README.md``); empty: :attr:`help`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "words", MappingProxyType(dict(self.words)))

    @property
    def reference(self) -> AxisValue | None:
        """The value a configuration is not described by: the default where it is :attr:`plain`."""
        return self.default if self.plain else None

    def next_values(self, value: AxisValue) -> tuple[AxisValue, AxisValue] | None:
        """(``value``, the value to try next) where this axis suggests one, else None."""
        if self.step_up and isinstance(value, int):
            return value, value * self.step_up
        if self.alternative and value == self.reference:
            return value, self.alternative
        return None

    def say(self, value: object) -> str:
        """``value`` in words (:attr:`words`, :attr:`phrase`)."""
        if self.kind is int and isinstance(value, int):
            return (self.phrase_one if value == 1 and self.phrase_one else self.phrase).format(value)
        return self.words.get(str(value), str(value))

    @property
    def row_column(self) -> str:
        """The cells table's column holding the value: :attr:`row_field`, else the name."""
        return self.row_field or self.name

    @property
    def column_doc(self) -> str:
        """The column's description: :attr:`column`, else :attr:`help`, with a string axis's
        accepted values."""
        text = self.column or self.help[0].upper() + self.help[1:] + "."
        return text + (f" One of: {', '.join(self.choices)}." if self.choices else "")

    @property
    def flag(self) -> str:
        return "--" + (self.cli or self.name.replace("_", "-"))

    def parse(self, text: str) -> tuple[AxisValue, ...]:
        """Parse a comma list given on the command line; raise HarnessError on any bad item."""
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise HarnessError(
                f"Received {self.flag}={text!r}; expected at least one value, "
                f"{self.accepted().removeprefix('expected ')}"
            )
        return tuple(self.check(self._convert(t)) for t in items)

    def _convert(self, token: str) -> AxisValue:
        """An integer axis's ``token`` as an integer where it reads as one (:meth:`check` names it
        where it does not, or takes a replica token)."""
        try:
            return int(token) if self.kind is int else token
        except ValueError:
            return token

    def check(self, value: object) -> AxisValue:
        """Return ``value`` if accepted, else raise HarnessError naming it and the accepted values."""
        if self.kind is int:
            if self.name == "replicas" and isinstance(value, str) and value in REPLICA_TOKENS:
                return REPLICA_TOKENS[value]
            if (
                isinstance(value, int)
                and not isinstance(value, bool)
                and value >= self.minimum
                and (self.maximum is None or value <= self.maximum)
            ):
                return value
        elif isinstance(value, str) and (
            value in self.choices or (self.name == "model" and parse_ref(value))
        ):
            return value
        raise HarnessError(f"Received {self.flag}={value!r}; {self.accepted()}")

    def accepted(self) -> str:
        if self.kind is int:
            hi = "" if self.maximum is None else f" and at most {self.maximum}"
            extra = f", or {REPLICAS_TO_MAX!r}, or {REPLICAS_TO_DEVICES!r}" if self.name == "replicas" else ""
            return f"expected integers of at least {self.minimum}{hi}{extra}."
        also = (
            "; or FILE.py:function, or package.module:function (your own Keras model)"
            if self.name == "model"
            else ""
        )
        return "expected one of: " + ", ".join(self.choices) + also + "."


CROSS_DEVICE_OPS_NAMES = ("auto", "nccl", "hierarchical_copy", "reduction_to_one_device")

COMMUNICATION_NAMES = ("auto", "ring", "nccl")

COMPUTE_DTYPE = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
"""The dtype each precision policy computes its matmuls and convolutions in (its MFU's peak)."""

MAX_TASKS = 1024
"""Most workers, or parameter servers, of a cell: a bound that keeps planning (one task object per
process) instant; a local cluster this size would already be far past one host's cores."""

AXES: tuple[Axis, ...] = (
    Axis(
        "model",
        str,
        "cnn",
        "model to train",
        MODEL_NAMES,
        words=MODEL_TITLES,
        column="The model trained; a user's own Keras model by its reference (FILE.py:function or "
        "package.module:function).",
        plain=False,
        always_named=True,
        keys=frozenset({BASELINE, ALONE, COMPUTES}),
    ),
    Axis(
        "data",
        str,
        "synthetic",
        "synthetic (fixed-seed MNIST-shaped pool) or the real MNIST file",
        ("synthetic", "mnist"),
        words={"synthetic": "synthetic data", "mnist": "the MNIST file"},
        essential=True,
        keys=frozenset({BASELINE, ALONE, COMPUTES}),
        column="synthetic: a fixed-seed pool, pre-batched and repeated; mnist: the real training split.",
    ),
    Axis(
        "strategy",
        str,
        "mirrored",
        "tf.distribute strategy",
        STRATEGY_NAMES,
        words={name: s.words for name, s in STRATEGIES.items()},
        column="The tf.distribute strategy.",
        plain=False,
        always_named=True,
        keys=frozenset({BASELINE, ALONE}),
    ),
    Axis(
        "cross_device_ops",
        str,
        "auto",
        "all-reduce implementation of MirroredStrategy",
        CROSS_DEVICE_OPS_NAMES,
        applies_to=strategies_where(lambda s: s.option_axis == "cross_device_ops"),
        inapplicable=NO_OPTION,
        words={
            "auto": "its default all-reduce",
            "nccl": "NcclAllReduce",
            "hierarchical_copy": "HierarchicalCopyAllReduce",
            "reduction_to_one_device": "ReductionToOneDevice",
        },
        column="Requested all-reduce implementation of mirrored; none elsewhere.",
    ),
    Axis(
        "communication",
        str,
        "auto",
        "collective implementation of MultiWorkerMirroredStrategy",
        COMMUNICATION_NAMES,
        applies_to=strategies_where(lambda s: s.option_axis == "communication"),
        inapplicable=NO_OPTION,
        words={"auto": "automatic collectives", "ring": "ring all-reduce", "nccl": "NCCL all-reduce"},
        column="Requested collective implementation of multi_worker_mirrored; none elsewhere.",
    ),
    Axis(
        "replicas",
        int,
        1,
        "replicas per worker (GPUs, or logical CPU devices without a GPU)",
        applies_to=strategies_where(lambda s: s.multi_device),
        inapplicable=1,
        phrase="on {} replicas",
        phrase_one="on 1 replica",
        always_named=True,
        column="Replicas per worker.",
        unit="devices",
    ),
    Axis(
        "workers",
        int,
        1,
        "worker processes, each on 127.0.0.1 with its own TF_CONFIG",
        maximum=MAX_TASKS,
        applies_to=MULTI_WORKER_STRATEGIES,
        inapplicable=1,
        phrase="on {} workers",
        phrase_one="on 1 worker",
        always_named=True,
        column="Worker processes (each a TF_CONFIG task; parameter_server: besides the coordinator and the ps tasks).",
        unit="processes",
    ),
    Axis(
        "ps",
        int,
        1,
        "parameter-server processes holding the variables (parameter_server)",
        maximum=MAX_TASKS,
        applies_to=strategies_where(lambda s: s.ps_tasks),
        inapplicable=0,
        phrase="{} parameter servers",
        phrase_one="1 parameter server",
        plain=False,
        column="Parameter-server tasks holding the variables (parameter_server; 0 elsewhere).",
        unit="processes",
    ),
    Axis(
        "batch",
        int,
        64,
        "batch size in examples: per replica (weak scaling) or global (strong)",
        phrase="batch {} per replica",
        row_field="per_replica_batch",
        essential=True,
        step_up=4,
        unit="examples",
    ),
    Axis(
        "accum_steps",
        int,
        1,
        "micro-batches whose gradients each replica sums before one all-reduce and one optimizer update",
        phrase="{} accumulation steps per update",
        phrase_one="no gradient accumulation",
        essential=True,
        step_up=4,
        keys=frozenset({BASELINE, ALONE}),
        column="Micro-batches per optimizer update: each replica sums their gradients locally, then one cross-replica reduction and one optimizer step.",
        unit="micro-batches",
    ),
    Axis(
        "loop",
        str,
        "ctl",
        "training loop: ctl = strategy.run inside an in-graph tf.function loop; "
        "fit = Keras model.fit with the suite's train step",
        ("ctl", "fit"),
        words={"ctl": "a custom training loop", "fit": "Keras Model.fit"},
        essential=True,
        keys=frozenset({BASELINE, ALONE}),
        column="ctl: strategy.run inside one tf.function holding an in-graph loop of steps_per_execution updates; fit: Keras model.fit(steps_per_execution=...) with the suite's train step (same update as ctl).",
    ),
    Axis(
        "steps_per_execution",
        int,
        10,
        "optimizer updates per tf.function call",
        phrase="{} updates per tf.function call",
        phrase_one="1 update per tf.function call",
        essential=True,
        step_up=10,
        keys=frozenset({BASELINE, ALONE}),
        column="Optimizer updates per tf.function call (per train_function call in fit).",
        unit="updates",
    ),
    Axis(
        "precision",
        str,
        "float32",
        "Keras dtype policy",
        ("float32", "mixed_bfloat16", "mixed_float16"),
        words={
            "float32": "float32",
            "mixed_bfloat16": "mixed precision (bfloat16)",
            "mixed_float16": "mixed precision (float16)",
        },
        alternative="mixed_bfloat16",
        essential=True,
        keys=frozenset({BASELINE, ALONE, COMPUTES}),
    ),
    Axis(
        "xla",
        str,
        "off",
        "XLA compilation of the training step: off, or on (ctl: each replica's update a "
        "tf.function(jit_compile=True) run by strategy.run; fit: compile(jit_compile=True)); never "
        "Keras's auto, which compiles fit under no strategy and not under mirrored",
        ("off", "on"),
        cli="jit-compile",
        words={"off": "no XLA", "on": "XLA (jit_compile=True)"},
        alternative="on",
        essential=True,
        keys=frozenset({BASELINE, ALONE, COMPUTES}),
        column="--jit-compile: off, or on (the training step asked to be XLA-compiled; jit_compile says what ran).",
    ),
    Axis(
        "loss",
        str,
        "auto",
        "training loss: auto (one output unit: binary cross-entropy; more: sparse categorical "
        "cross-entropy; both on logits), or the one named (synthetic labels to match)",
        LOSS_NAMES,
        words={"auto": "the model's own loss"},
        keys=frozenset({BASELINE, ALONE, COMPUTES}),
        column="--loss as asked: auto (binary cross-entropy on one output unit, sparse categorical cross-entropy on more; both on logits) or the loss named; in the cell id after the model when not auto.",
    ),
    Axis(
        "scaling",
        str,
        "weak",
        "weak: batch is per replica; strong: batch is global",
        ("weak", "strong"),
        words={"weak": "weak scaling", "strong": "a fixed global batch (strong scaling)"},
        column="weak (per-replica batch fixed) or strong (global batch fixed); decides the efficiency baseline.",
    ),
    Axis(
        "tenants",
        int,
        1,
        "independent training processes of this cell at once on the same "
        "devices (co-tenancy); the row's throughput is their sum",
        maximum=16,
        applies_to=SINGLE_PROCESS_STRATEGIES,
        inapplicable=1,
        phrase="{} processes at once, throughput summed",
        phrase_one="one process",
        always_named=True,
        keys=frozenset({BASELINE}),
        column="Independent training processes of this cell run at once on the same devices (co-tenancy; 1 = alone). With more than one, examples_per_sec is their aggregate.",
        unit="processes",
    ),
    Axis(
        "tenant_framework",
        str,
        NONE,
        "a co-tenant from another framework: one process training the same model in JAX or PyTorch "
        "on the same devices; each side's throughput alone and together, in turns",
        (NONE, *FRAMEWORKS),
        applies_to=SINGLE_PROCESS_STRATEGIES,
        inapplicable=NONE,
        words={NONE: "alone", "jax": "beside a JAX process", "torch": "beside a PyTorch process"},
        always_named=True,
        keys=frozenset({BASELINE, ALONE}),
        column="A co-tenant from another framework (jax, torch; none: no such co-tenant): one process training the same model at effective_batch examples per step (plain SGD, synthetic data) on the same devices, taking turns with the TensorFlow process alone, and both at once. Then examples_per_sec is the TensorFlow side's throughput while both trained.",
    ),
    Axis(
        "optimizer",
        str,
        "sgd",
        "the Keras optimizer, at the learning rate of every cell: sgd (plain SGD) or adam (Adam: "
        "two slot variables per weight to read and write in each update)",
        ("sgd", "adam"),
        words={"sgd": "plain SGD", "adam": "Adam"},
        keys=frozenset({BASELINE, ALONE, COMPUTES}),
        column="The Keras optimizer (learning_rate: its rate).",
    ),
)

AXIS_BY_NAME: dict[str, Axis] = {a.name: a for a in AXES}

SENTENCE_AXES: tuple[str, ...] = (
    ("strategy", "replicas", "workers", "ps", "cross_device_ops", "communication")
    + ("loop", "batch", "accum_steps", "precision", "xla", "steps_per_execution", "scaling")
    + ("tenants", "tenant_framework", "data", "loss", "optimizer")
)
"""The axes in the order a description (:func:`harness.spec.words.describe`) says them: the
strategy and its devices, the training choices, what else sets the cell apart. Every axis but the
model, which heads what is said about it."""

OPTION_AXES: tuple[str, ...] = tuple(
    dict.fromkeys(s.option_axis for s in STRATEGIES.values() if s.option_axis is not None)
)
"""The axes that choose a strategy's all-reduce implementation (``cross_device_ops``, ``communication``)."""

DEVICE_AXES: tuple[str, ...] = tuple(
    dict.fromkeys(s.device_axis for s in STRATEGIES.values() if s.device_axis is not None)
)
"""The axes that add a strategy's devices (``replicas``, ``workers``)."""


def key_axes(key: str) -> tuple[Axis, ...]:
    """The axes that belong to identity ``key`` (:data:`BASELINE`, :data:`ALONE`, :data:`COMPUTES`)."""
    return tuple(a for a in AXES if key in a.keys)
