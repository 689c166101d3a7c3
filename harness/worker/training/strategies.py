"""Building a cell's tf.distribute strategy: one builder per strategy descriptor
(:data:`harness.spec.strategies.STRATEGIES`), used for measured cells and the doctor's probes alike,
and the cross-device ops by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.spec.cell import Cell


def _cross_device_ops(tf: Any, name: str) -> Any:
    registry: dict[str, Callable[[], Any]] = {
        "auto": lambda: None,
        "none": lambda: None,  # one replica: no reduce to choose
        "nccl": tf.distribute.NcclAllReduce,
        "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce,
        "reduction_to_one_device": tf.distribute.ReductionToOneDevice,
    }
    return registry[name]()


def _multi_worker_mirrored(tf: Any, cell: Cell, timeout_s: float | None) -> Any:
    """Joins the cluster in TF_CONFIG (set by the launcher); blocks until every peer has joined.
    ``timeout_s``: a collective that takes longer fails (None: no limit)."""
    name = "AUTO" if cell.communication == "none" else cell.communication.upper()  # none: one device
    chosen = getattr(tf.distribute.experimental.CommunicationImplementation, name)  # AUTO, RING, NCCL
    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=chosen, timeout_seconds=timeout_s
        )
    )


Builder = Callable[[Any, Cell, Sequence[str], float | None], Any]
"""``(tf, cell, devices, collective_timeout_s)`` -> the cell's strategy (:func:`make_strategy`)."""

BUILDERS: dict[str, Builder] = {
    "default": lambda tf, cell, devices, timeout_s: tf.distribute.get_strategy(),
    "one_device": lambda tf, cell, devices, timeout_s: tf.distribute.OneDeviceStrategy(devices[0]),
    "mirrored": lambda tf, cell, devices, timeout_s: tf.distribute.MirroredStrategy(
        list(devices[: cell.replicas]), cross_device_ops=_cross_device_ops(tf, cell.cross_device_ops)
    ),
    "central_storage": lambda tf, cell, devices, timeout_s: tf.distribute.experimental.CentralStorageStrategy(
        list(devices[: cell.replicas])
    ),
    "multi_worker_mirrored": lambda tf, cell, devices, timeout_s: _multi_worker_mirrored(tf, cell, timeout_s),
    # the coordinator's strategy over the cluster in TF_CONFIG (chief, workers and ps tasks, each a
    # tf.distribute.Server); variables live on the ps tasks, each worker updates them on its own
    "parameter_server": lambda tf, cell, devices, timeout_s: tf.distribute.ParameterServerStrategy(
        tf.distribute.cluster_resolver.TFConfigClusterResolver()
    ),
}


def distribute(strategy: Any, dataset: Any, cell: Cell) -> Any:
    """The distributed form of a dataset of update batches (``effective_batch`` examples each): in one
    process ``experimental_distribute_dataset`` splits each batch into contiguous per-replica slices;
    with several workers each reads the same batches and keeps its own contiguous slice, so global
    replica r sees what replica r of MirroredStrategy sees (the single-process cell's computation)."""
    import tensorflow as tf

    if cell.workers == 1:
        return strategy.experimental_distribute_dataset(dataset)
    per_replica = cell.per_replica_batch * cell.accum_steps

    def worker_slice(context: Any) -> Any:
        first = context.input_pipeline_id * cell.replicas * per_replica
        mine, shape = slice(first, first + cell.replicas * per_replica), [cell.replicas, per_replica]

        def take(x: Any, y: Any) -> Any:
            return tf.reshape(x[mine], [*shape, *x.shape[1:]]), tf.reshape(y[mine], shape)

        return dataset.map(take).unbatch()  # one element per local replica, in replica order

    return strategy.distribute_datasets_from_function(worker_slice)


def make_strategy(cell: Cell, devices: Sequence[str], collective_timeout_s: float | None = None) -> Any:
    """The cell's strategy over the first ``cell.replicas`` of ``devices`` (TF device names).
    ``collective_timeout_s``: cross-worker collectives fail after this many seconds (None: no limit;
    the doctor's probes set one, measured cells rely on the launcher's deadlines)."""
    import tensorflow as tf

    return BUILDERS[cell.strategy](tf, cell, devices, collective_timeout_s)


def effective_cross_device_ops(strategy: Any) -> str:
    """What the strategy really all-reduces with, e.g. ``CollectiveAllReduce(RING)``, or ``none``."""
    ops = getattr(strategy.extended, "_cross_device_ops", None)
    if ops is None:
        return "none"
    name = type(ops).__name__
    options = getattr(ops, "_options", None)
    implementation = getattr(options, "implementation", None)
    if implementation is not None:
        name += f"({getattr(implementation, 'name', implementation)})"
    return name
