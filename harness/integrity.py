"""Checks run after every cell: a cell failing one is ``status="invalid"``, never a throughput.

1. ``num_replicas_in_sync`` equals the cell's replicas in sync (replicas x workers; a worker's
   replicas under parameter_server).
2. Every model and optimizer variable has the class (parameter_server: the placement) its strategy
   creates (a model built outside ``strategy.scope()`` trains silently on one device with plain
   variables).
3. All replica copies of each variable are bitwise equal.
4. An all-reduce of (replica id + 1) through the strategy returns n(n+1)/2 on every replica (not
   under parameter_server: its coordinator cannot run replica functions, and workers do not
   all-reduce with each other).
5. The final loss and every weight are finite.
6. Synchronous strategies: ``optimizer.iterations`` equals the updates the loop ran. (Under
   parameter_server Keras 3 increments it by a read then an assign on the ps, so concurrent workers
   lose increments; the row reports it instead.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def _expected_variable_class(strategy_name: str, replicas: int
                             ) -> tuple[str, Callable[[Any], bool]] | None:
    """(label, test) for the variables the strategy creates; None where any variable will do
    (single-device strategies, and central storage on one device, which then makes plain ones)."""
    import tensorflow as tf
    from tensorflow.python.distribute import ps_values

    registry: dict[str, tuple[str, Callable[[Any], bool]]] = {
        "mirrored": ("DistributedValues (MirroredVariable)",
                     lambda v: isinstance(v, tf.distribute.DistributedValues)),
        "multi_worker_mirrored": ("DistributedValues (MirroredVariable)",
                                  lambda v: isinstance(v, tf.distribute.DistributedValues)),
        "central_storage": ("AggregatingVariable",
                            lambda v: isinstance(v, ps_values.AggregatingVariable)),
        "parameter_server": ("placed on a ps task", lambda v: "/job:ps/" in v.device),
    }
    if strategy_name == "central_storage" and replicas == 1:
        return None
    return registry.get(strategy_name)


def _tf_variable(v: Any) -> Any:
    """The tf.Variable behind a Keras 3 variable (``.value``), or ``v`` itself."""
    return getattr(v, "value", v)


def _allreduce_probe(strategy: Any) -> list[float]:
    import tensorflow as tf

    @tf.function
    def probe() -> Any:
        def fn() -> Any:
            ctx = tf.distribute.get_replica_context()
            x = tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32) * tf.ones((4,))
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, x)
        return strategy.run(fn)

    return [float(t.numpy()[0]) for t in strategy.experimental_local_results(probe())]


ASYNCHRONOUS = ("parameter_server",)
"""Strategies whose workers update the variables independently (no all-reduce, no exact count)."""


def check(strategy: Any, strategy_name: str, model: Any, optimizer: Any, replicas: int,
          final_loss: float, updates: int | None = None) -> list[str]:
    """Every problem found, in words; empty when the cell is trustworthy. ``replicas``: replicas in
    sync expected; ``updates``: optimizer updates the loop ran (None: do not check)."""
    problems: list[str] = []
    n = strategy.num_replicas_in_sync
    if n != replicas:
        problems.append(f"num_replicas_in_sync is {n}, expected {replicas}")

    expected = _expected_variable_class(strategy_name, replicas)
    variables = [("model", v) for v in model.weights] + [("optimizer", v) for v in optimizer.variables]
    if expected is not None:
        label, ok = expected
        wrong = [(f"{owner} variable {v.path}", _tf_variable(v)) for owner, v in variables
                 if not ok(_tf_variable(v))]
        if wrong:
            name, tv = wrong[0]
            problems.append(f"{len(wrong)} of {len(variables)} variables are not {label}: "
                            f"built outside strategy.scope()? e.g. {name} is {type(tv).__name__}")

    for owner, v in variables:
        tv = _tf_variable(v)
        arrays = [np.asarray(c.numpy()) for c in strategy.experimental_local_results(tv)]
        if any(not np.array_equal(arrays[0], a) for a in arrays[1:]):
            problems.append(f"replica copies of {owner} variable {v.path} differ")
            break
        if arrays[0].dtype.kind == "f" and not np.all(np.isfinite(arrays[0])):
            problems.append(f"{owner} variable {v.path} holds non-finite values")
            break

    if strategy_name not in ASYNCHRONOUS:
        sums = _allreduce_probe(strategy)
        want = n * (n + 1) / 2
        if any(s != want for s in sums):
            problems.append(f"all-reduce of replica ids 1..{n} returned {sums}, expected {want}")
        iterations = int(optimizer.iterations.numpy())
        if updates is not None and iterations != updates:
            problems.append(f"optimizer.iterations is {iterations} after {updates} updates")

    if not math.isfinite(final_loss):
        problems.append(f"final loss is {final_loss}")
    return problems


def idle_workers(per_worker_updates: list[list[int]]) -> list[str]:
    """Parameter server: a worker that ran no update in any timed window hung or failed, and the
    coordinator worked around it; the figure is then not that of the cell's worker count. (One
    window without a given worker is possible by chance when a window holds few calls.)"""
    return [f"worker {w} ran no update in the timed windows (hung or failed; the coordinator "
            f"scheduled around it)" for w, counts in enumerate(per_worker_updates) if sum(counts) == 0]
