"""Checks run after every cell: a cell failing one is ``status="invalid"``, never a throughput.

1. ``num_replicas_in_sync`` equals the cell's replicas x workers.
2. Every model and optimizer variable has the class its strategy creates (a model built outside
   ``strategy.scope()`` trains silently on one device with plain variables).
3. All replica copies of each variable are bitwise equal.
4. An all-reduce of (replica id + 1) through the strategy returns n(n+1)/2 on every replica.
5. The final loss and every weight are finite.
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


def check(strategy: Any, strategy_name: str, model: Any, optimizer: Any, replicas: int,
          final_loss: float) -> list[str]:
    """Every problem found, in words; empty when the cell is trustworthy."""
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

    sums = _allreduce_probe(strategy)
    want = n * (n + 1) / 2
    if any(s != want for s in sums):
        problems.append(f"all-reduce of replica ids 1..{n} returned {sums}, expected {want}")

    if not math.isfinite(final_loss):
        problems.append(f"final loss is {final_loss}")
    return problems
