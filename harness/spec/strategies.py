"""One descriptor per ``tf.distribute`` strategy: all the harness knows of it without TensorFlow, as
Keras's ``Distribution`` subclasses carry their own behaviour: its processes and their roles,
whether its updates are synchronous, its variables, whether the all-reduce check applies, the axes
that mean something for it, whether it is the plain reference, the loops and precisions it cannot
run (and why). Code elsewhere asks the descriptor (``STRATEGIES[cell.strategy]``,
:func:`strategies_where`, :func:`only_strategy`) instead of comparing names (a test greps for such
comparisons); :mod:`harness.worker.training.strategies` builds them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

NO_OPTION = "none"
"""The value of an option axis (cross_device_ops, communication) where it means nothing: a strategy
without that axis, or a cell on one device."""


class Role(StrEnum):
    """A process's part in a cell."""

    CHIEF = "chief"
    """Runs the cell and reports its row (the only process that does)."""
    PEER = "peer"
    """Runs the cell and reports nothing: a MultiWorkerMirrored worker other than the chief."""
    SERVER = "server"
    """A ``tf.distribute.Server`` that the chief's coordinator drives: a parameter-server cell's
    worker or ps task."""


class Variables(StrEnum):
    """The kind of variable a strategy creates in its scope (what the diagnosis expects)."""

    ANY = "any"
    """One device: plain variables are right."""
    MIRRORED = "mirrored"
    """``DistributedValues``: one copy per replica, each on its replica's device."""
    AGGREGATING = "aggregating"
    """CentralStorageStrategy's ``AggregatingVariable`` (on one replica: plain)."""
    ON_PS = "on ps"
    """Placed on a parameter-server task."""


@dataclass(frozen=True)
class Task:
    """One process of a cell: its TF_CONFIG task (type and index) and its part in the harness."""

    type: str
    index: int
    role: Role

    @property
    def label(self) -> str:
        name = self.type if self.type == "chief" else f"{self.type} {self.index}"
        return name + (" (chief)" if self.role == Role.CHIEF and self.type != "chief" else "")


TaskLayout = Callable[[int, int], tuple[Task, ...]]
"""(workers, ps) -> the cell's processes, chief first."""


def one_process(workers: int, ps: int) -> tuple[Task, ...]:
    return (Task("local", 0, Role.CHIEF),)


def collective_workers(workers: int, ps: int) -> tuple[Task, ...]:
    """MultiWorkerMirrored: ``workers`` identical workers; worker 0 is the chief."""
    return tuple(Task("worker", i, Role.CHIEF if i == 0 else Role.PEER) for i in range(workers))


def coordinator_cluster(workers: int, ps: int) -> tuple[Task, ...]:
    """Parameter server: a chief (the coordinator), ``workers`` workers and ``ps`` ps tasks, every
    one but the chief a ``tf.distribute.Server``."""
    return (
        (Task("chief", 0, Role.CHIEF),)
        + tuple(Task("worker", i, Role.SERVER) for i in range(workers))
        + tuple(Task("ps", j, Role.SERVER) for j in range(ps))
    )


@dataclass(frozen=True)
class Strategy:
    """What the harness knows about one strategy (see the module docstring)."""

    name: str
    tf_class: str
    """The TensorFlow class the worker builds."""
    variables: Variables
    layout: TaskLayout = one_process
    option_axis: str | None = None
    """The axis naming the implementation of the all-reduce that sums its gradients: cross_device_ops
    or communication (None: central storage, which aggregates on one device, and one device)."""
    predict_option: str | None = None
    """The value of its option axis that ``predict`` prices when ``--op`` names none (mirrored:
    auto; multi_worker_mirrored: ring, the all-reduce the scaling model describes)."""
    reference: bool = False
    """The plain way to train: no distribution of its own (``tf.distribute.get_strategy()``), so
    ``verify`` prefers it as the reference among cells of equal size."""
    multi_device: bool = True
    """Whether the replicas axis applies (more than one device per process)."""
    synchronous: bool = True
    """All replicas share every update, and an all-reduce of known values through the strategy
    must sum right after the cell (False: each worker applies its own update, asynchronously, in
    steps scheduled from a coordinator process onto worker servers, which never all-reduce with
    each other)."""
    training_tasks: tuple[str, ...] = ("local",)
    """TF_CONFIG task types that run training steps (get cores and devices)."""
    unsupported_loops: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    min_inter_op_threads: int = 1
    """Fewest threads in each task's inter-op pool (TF_NUM_INTEROP_THREADS) for the strategy to make
    progress: TensorFlow sizes the pool from the cores the process may use, and a parameter-server
    cluster whose tasks each have one core hangs at its first step with pools of 1 (measured on
    TensorFlow 2.21, two 1-core Slurm nodes)."""
    unsupported_precisions: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    say: str = ""
    """The strategy in words, where its class name does not say it ("no distribution strategy")."""

    @property
    def words(self) -> str:
        """The strategy as a sentence names it: :attr:`say`, else its class's name."""
        return self.say or self.tf_class.rsplit(".", 1)[-1]

    @property
    def multi_worker(self) -> bool:
        """Runs as several processes on TensorFlow's cluster runtime (TF_CONFIG, gRPC)."""
        return self.layout is not one_process

    @property
    def ps_tasks(self) -> bool:
        """Whether its cells have parameter-server tasks (the ps axis applies)."""
        return any(t.type == "ps" for t in self.layout(1, 1))

    @property
    def device_axis(self) -> str | None:
        """The axis that adds all-reduce participants when ``predict`` or the collectives sweep
        scales it: ``workers`` (one replica each) for a multi-worker strategy, ``replicas`` (of one
        process) for a multi-device one; None where it runs on one device."""
        if self.multi_worker:
            return "workers"
        return "replicas" if self.multi_device else None

    def option_in(self, values: Mapping[str, Any]) -> str:
        """The value of its option axis in ``values`` (a cell's fields or a results row):
        :data:`NO_OPTION` where it has no option axis."""
        return str(values[self.option_axis]) if self.option_axis else NO_OPTION

    def synchronous_at(self, workers: int) -> bool:
        """Whether training is deterministic SGD on the effective batch: a parameter-server cell
        with one worker has no concurrent updates."""
        return self.synchronous or workers == 1

    def replicas_in_sync(self, replicas: int, workers: int) -> int:
        """Replicas sharing each optimizer update: every replica of every worker, or, when each
        worker updates on its own, one worker's replicas."""
        return replicas * workers if self.synchronous else replicas


_FIT_MWMS = (
    'Keras 3 fit fails under MultiWorkerMirroredStrategy ("Attempt to convert a value '
    '(PerReplica...)", keras#20585): use the ctl loop'
)
_FIT_PS = (
    "Keras 3 fit does not support ParameterServerStrategy (keras#18624): use the ctl loop, "
    "which schedules steps through tf.distribute.coordinator.ClusterCoordinator"
)

STRATEGIES: Mapping[str, Strategy] = MappingProxyType(
    {
        s.name: s
        for s in (
            Strategy(
                "default",
                "tf.distribute.get_strategy()",
                Variables.ANY,
                multi_device=False,
                reference=True,
                say="no distribution strategy",
            ),
            Strategy("one_device", "tf.distribute.OneDeviceStrategy", Variables.ANY, multi_device=False),
            Strategy(
                "mirrored",
                "tf.distribute.MirroredStrategy",
                Variables.MIRRORED,
                option_axis="cross_device_ops",
                predict_option="auto",
            ),
            Strategy(
                "central_storage",
                "tf.distribute.experimental.CentralStorageStrategy",
                Variables.AGGREGATING,
                unsupported_precisions=MappingProxyType(
                    {
                        "mixed_float16": "CentralStorageStrategy fails with the mixed_float16 "
                        "loss-scale optimizer"
                    }
                ),
            ),
            Strategy(
                "multi_worker_mirrored",
                "tf.distribute.MultiWorkerMirroredStrategy",
                Variables.MIRRORED,
                collective_workers,
                option_axis="communication",
                predict_option="ring",
                training_tasks=("chief", "worker"),
                unsupported_loops=MappingProxyType({"fit": _FIT_MWMS}),
            ),
            Strategy(
                "parameter_server",
                "tf.distribute.ParameterServerStrategy",
                Variables.ON_PS,
                coordinator_cluster,
                synchronous=False,
                training_tasks=("worker",),
                min_inter_op_threads=2,
                unsupported_loops=MappingProxyType({"fit": _FIT_PS}),
            ),
        )
    }
)
"""Every strategy, by name, in the order the CLI lists them."""

STRATEGY_NAMES = tuple(STRATEGIES)
SINGLE_PROCESS_STRATEGIES = tuple(n for n, s in STRATEGIES.items() if not s.multi_worker)
MULTI_WORKER_STRATEGIES = tuple(n for n, s in STRATEGIES.items() if s.multi_worker)
"""Strategies whose cells run as several processes on TensorFlow's cluster runtime (TF_CONFIG)."""


def strategies_where(test: Callable[[Strategy], bool]) -> tuple[str, ...]:
    """Names of the strategies whose descriptor passes ``test`` (for an axis's ``applies_to``)."""
    return tuple(n for n, s in STRATEGIES.items() if test(s))


def only_strategy(test: Callable[[Strategy], bool]) -> Strategy:
    """The one strategy whose descriptor passes ``test`` (ValueError unless exactly one does)."""
    found = [s for s in STRATEGIES.values() if test(s)]
    if len(found) != 1:
        raise ValueError(
            f"expected one strategy to pass the test; {len(found)} do: {', '.join(s.name for s in found)}"
        )
    return found[0]


ALLREDUCE_STRATEGIES = strategies_where(lambda s: s.option_axis is not None)
"""Strategies whose all-reduce implementation an option axis picks (what ``predict``, the
collectives table and the scaling model cover)."""


def cluster_strategy(task_types: tuple[str, ...]) -> Strategy:
    """The one multi-worker strategy a cluster with these TF_CONFIG task types can run: the one
    whose layout has ps tasks when the cluster has a ps job."""
    wants_ps = "ps" in task_types
    return next(s for s in STRATEGIES.values() if s.multi_worker and s.ps_tasks == wants_ps)
