"""Checks run after every cell: a cell failing one is ``status="invalid"``, never a throughput.

1. ``num_replicas_in_sync`` equals the cell's replicas in sync (a worker's under parameter_server).
2. :func:`harness.worker.checks.diagnosis.diagnose` finds the model, optimizer and devices right.
3. All replica copies of each variable are bitwise equal, except as :data:`MAY_DIFFER` says
   (docs/explanation/mfu.md: BatchNorm's moving statistics; an Embedding's table within
   :data:`SPARSE_RTOL` of its largest magnitude).
4. An all-reduce of (replica id + 1) gives n(n+1)/2 on every replica where the strategy is
   synchronous (not parameter_server, whose workers do not all-reduce).
5. The final loss and every weight are finite.
6. Synchronous strategies: ``optimizer.iterations`` equals the updates run (not parameter_server:
   docs/explanation/multi-worker.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.spec.cell import Cell
from harness.spec.strategies import STRATEGIES
from harness.worker.checks.diagnosis import diagnose, tf_variable


def allreduce_sums(strategy: Any) -> list[float]:
    """Each replica's result of all-reducing (replica id + 1) through the strategy: n(n+1)/2 when
    right."""
    import tensorflow as tf

    @tf.function
    def probe() -> Any:
        def fn() -> Any:
            ctx = tf.distribute.get_replica_context()
            x = tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32) * tf.ones((4,))
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, x)

        return strategy.run(fn)

    return [float(t.numpy()[0]) for t in strategy.experimental_local_results(probe())]


SPARSE_RTOL = 1e-4
"""How far (relative to the table's largest magnitude) replica copies of a sparsely updated
variable may drift apart by adding the same slices in a different order (3.7e-9 of 0.05 after 8
updates of the transformer here)."""


@dataclass(frozen=True)
class Difference:
    """Why replica copies of a layer's variable may differ, and how far (None: any amount)."""

    layer: str
    variables: tuple[str, ...]
    why: str
    rtol: float | None


MAY_DIFFER: tuple[Difference, ...] = (
    Difference(
        "BatchNormalization",
        ("moving_mean", "moving_variance"),
        "per-replica batch statistics (not synchronized)",
        None,
    ),
    Difference("Embedding", ("embeddings",), "sparse updates added in each replica's order", SPARSE_RTOL),
)
"""The variables whose replica copies may differ (see the module doc), by layer class and name."""


def allowed_differences(model: Any) -> dict[int, Difference]:
    """id(variable) -> why its replica copies may differ, for every such variable of ``model``."""
    return {
        id(v): rule
        for layer in model._flatten_layers(include_self=False, recursive=True)
        for rule in MAY_DIFFER
        if type(layer).__name__ == rule.layer
        for v in layer.weights
        if v.name in rule.variables
    }


def copies_agree(arrays: list[Any], rule: Difference | None) -> bool:
    """Whether replica copies agree: bitwise, or as ``rule`` allows."""
    if rule is None:
        return all(np.array_equal(arrays[0], a) for a in arrays[1:])
    if rule.rtol is None:
        return True
    scale = float(np.max(np.abs(arrays[0]))) if arrays[0].size else 0.0
    return all(np.allclose(arrays[0], a, rtol=0.0, atol=rule.rtol * scale) for a in arrays[1:])


def check(
    strategy: Any, cell: Cell, model: Any, optimizer: Any, final_loss: float, updates: int | None = None
) -> list[str]:
    """Every problem found, in words; empty when ``cell`` (its strategy, its replicas in sync) is
    trustworthy. ``updates``: optimizer updates the loop ran (None: do not check)."""
    strategy_name, replicas = cell.strategy, cell.replicas_in_sync
    problems: list[str] = []
    n = strategy.num_replicas_in_sync
    if n != replicas:
        problems.append(f"num_replicas_in_sync is {n}, expected {replicas}")

    problems += diagnose(strategy, strategy_name, model, optimizer, replicas)
    variables = [("model", v) for v in model.weights] + [("optimizer", v) for v in optimizer.variables]
    allowed = allowed_differences(model)
    for owner, v in variables:
        arrays = [np.asarray(c.numpy()) for c in strategy.experimental_local_results(tf_variable(v))]
        if not copies_agree(arrays, allowed.get(id(v))):
            problems.append(f"replica copies of {owner} variable {v.path} differ")
            break
        if arrays[0].dtype.kind == "f" and not np.all(np.isfinite(arrays[0])):
            problems.append(f"{owner} variable {v.path} holds non-finite values")
            break

    if STRATEGIES[strategy_name].synchronous:
        sums = allreduce_sums(strategy)
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
    return [
        f"worker {w} ran no update in the timed windows (hung or failed; the coordinator scheduled around it)"
        for w, counts in enumerate(per_worker_updates)
        if sum(counts) == 0
    ]
