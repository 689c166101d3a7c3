"""STRATEGIES and CROSS_DEVICE_OPS registries: build the tf.distribute strategy of a cell."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.spec import Cell


def _cross_device_ops(name: str) -> Any:
    import tensorflow as tf

    registry: dict[str, Callable[[], Any]] = {
        "auto": lambda: None,
        "nccl": tf.distribute.NcclAllReduce,
        "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce,
        "reduction_to_one_device": tf.distribute.ReductionToOneDevice,
    }
    return registry[name]()


def _default(cell: Cell, devices: Sequence[str]) -> Any:
    import tensorflow as tf

    return tf.distribute.get_strategy()


def _one_device(cell: Cell, devices: Sequence[str]) -> Any:
    import tensorflow as tf

    return tf.distribute.OneDeviceStrategy(devices[0])


def _mirrored(cell: Cell, devices: Sequence[str]) -> Any:
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(
        list(devices[: cell.replicas]), cross_device_ops=_cross_device_ops(cell.cross_device_ops))


def _central_storage(cell: Cell, devices: Sequence[str]) -> Any:
    import tensorflow as tf

    return tf.distribute.experimental.CentralStorageStrategy(list(devices[: cell.replicas]))


STRATEGIES: dict[str, Callable[[Cell, Sequence[str]], Any]] = {
    "default": _default,
    "one_device": _one_device,
    "mirrored": _mirrored,
    "central_storage": _central_storage,
}


def make_strategy(cell: Cell, devices: Sequence[str]) -> Any:
    """The cell's strategy over the first ``cell.replicas`` of ``devices`` (TF device names)."""
    return STRATEGIES[cell.strategy](cell, devices)


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
