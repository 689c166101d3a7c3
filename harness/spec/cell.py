"""The :class:`Cell`: one fully specified measurement, its derived sizes and its stable id. Pure data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from harness.spec.axes import AXES, AXIS_BY_NAME, OPTION_AXES
from harness.spec.frameworks import NONE
from harness.spec.models import as_model, model_label
from harness.spec.strategies import NO_OPTION, STRATEGIES, Strategy, Task


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
    xla: str = "off"
    scaling: str = "weak"
    tenants: int = 1
    loss: str = "auto"
    tenant_framework: str = NONE
    optimizer: str = "sgd"

    def __post_init__(self) -> None:
        """Check every axis value (HarnessError naming a bad one and the accepted ones), then
        collapse axes that mean nothing here, so equal measurements have equal ids: cross-device
        ops exist only for mirrored, replicas only for multi-device strategies; on one device weak
        and strong scaling are the same measurement, and so are the cross-device ops and the
        collective communications (TensorFlow skips the reduce of a single value:
        ``CrossDeviceOps.reduce``'s one-value shortcut)."""
        object.__setattr__(self, "model", as_model(self.model))  # a user's model: a ModelRef
        AXIS_BY_NAME["strategy"].check(self.strategy)
        for axis in AXES:
            if getattr(self, axis.name) != axis.inapplicable or not axis.applies_to:
                axis.check(getattr(self, axis.name))
            if axis.applies_to and self.strategy not in axis.applies_to:
                object.__setattr__(self, axis.name, axis.inapplicable)
        if self.devices == 1:
            object.__setattr__(self, "scaling", "weak")
            for name in OPTION_AXES:
                object.__setattr__(self, name, AXIS_BY_NAME[name].inapplicable)

    @property
    def devices(self) -> int:
        """Replicas in sync across all workers."""
        return self.replicas * self.workers

    @property
    def kind(self) -> Strategy:
        """The strategy's descriptor (:mod:`harness.spec.strategies`)."""
        return STRATEGIES[self.strategy]

    @property
    def option(self) -> str:
        """Its all-reduce implementation: the value of the strategy's option axis
        (``cross_device_ops`` or ``communication``), ``none`` where there is none or one device."""
        return str(self.kind.option_in(vars(self)))

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The processes the cell runs as, chief first (one for a single-process strategy)."""
        return self.kind.layout(self.workers, self.ps)

    @property
    def jit_compile(self) -> bool:
        """Whether the cell's training function is asked to be XLA-compiled (its ``xla`` axis,
        ``--jit-compile``): the one place that decides it, for ``ctl`` and the parameter-server loop
        (the ``tf.function`` of each update's step) and ``fit`` (its ``compile``) alike. Never
        Keras's ``"auto"``, which turns XLA on for a GPU model built outside any strategy scope and
        off inside one, so ``fit`` under the default strategy would compile unlike ``fit`` under
        mirrored. What ran is what the worker reports: the row's ``jit_compile``."""
        return self.xla == "on"

    @property
    def processes(self) -> int:
        return len(self.tasks)

    @property
    def replicas_in_sync(self) -> int:
        """Replicas that share each optimizer update: every device, except where each worker
        updates the variables on its own (asynchronously) with its own replicas."""
        return self.kind.replicas_in_sync(self.replicas, self.workers)

    @property
    def global_batch(self) -> int:
        """Examples per micro-step across all replicas and workers (asynchronous strategies: one
        update on every worker)."""
        return self.batch if self.scaling == "strong" else self.batch * self.devices

    @property
    def effective_batch(self) -> int:
        """Examples per optimizer update: per_replica_batch x replicas_in_sync x accum_steps
        (= global_batch x accum_steps for synchronous strategies)."""
        if self.kind.synchronous:
            return self.global_batch * self.accum_steps
        return self.per_replica_batch * self.replicas_in_sync * self.accum_steps

    @property
    def per_replica_batch(self) -> int:
        """Examples per replica per micro-step (floor for a strong batch that does not divide)."""
        return self.batch // self.devices if self.scaling == "strong" else self.batch

    @property
    def id(self) -> str:
        """Stable readable id, e.g. ``cnn/mirrored[auto]/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak``:
        ``b<per-replica batch>`` for weak scaling, ``gb<global batch>`` for strong; ps and tenant counts
        join the topology (``r1w2p1``, ``r2w1t2``), a co-tenant's framework its name (``r1w1+jax``); a loss
        other than ``auto`` and an optimizer other than ``sgd`` follow the model (``cnn+adam``); XLA marks
        the precision (``float32+xla``)."""
        strategy = self.strategy + (f"[{self.option}]" if self.option != NO_OPTION else "")
        loss = ("" if self.loss == "auto" else f"+{self.loss}") + (
            "" if self.optimizer == "sgd" else f"+{self.optimizer}"
        )
        return "/".join(
            (
                model_label(self.model) + loss,
                strategy,
                f"r{self.replicas}w{self.workers}"
                + (f"p{self.ps}" if self.ps else "")
                + (f"t{self.tenants}" if self.tenants > 1 else "")
                + (f"+{self.tenant_framework}" if self.tenant_framework != NONE else ""),
                f"gb{self.batch}" if self.scaling == "strong" else f"b{self.batch}",
                f"acc{self.accum_steps}",
                self.loop,
                f"spe{self.steps_per_execution}",
                self.precision + ("+xla" if self.jit_compile else ""),
                self.data,
                self.scaling,
            )
        )

    @property
    def topology(self) -> tuple[int, int, int]:
        """(workers, replicas, tenants): cells run in this order, 1-device cells (the baselines)
        first, each alone before it shares its devices."""
        return (self.workers, self.replicas, self.tenants)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        """From :meth:`to_dict` output; axes added later take their defaults."""
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})
