"""Where an update's time goes: each part of a cell's update timed alone, in the cell's own process,
after its timed windows, with the cell's own strategy, model and input pipeline.

Every part is a ``tf.function`` holding an in-graph loop of n repetitions (dispatch: n calls from
Python), calibrated so that a window lasts about ``window_s``; three windows, each ending with a
host sync; the part's time is the median window / n. Results kept in a per-replica sink variable
(``ON_READ``, so adding to it is no cross-replica reduction) so that nothing is pruned.

- ``compute_s``: forward and backward passes of one update (accum_steps micro-batches, every replica)
  on a batch already on the devices: no reduction, no optimizer step, no input pipeline;
- ``allreduce_s``: one all-reduce of the trainable variables' shapes and dtypes through the
  strategy's cross-device ops (``ReplicaContext.all_reduce(SUM, [...])``, as the optimizer hands the
  gradients over); 0 with one replica in sync (no reduction is made);
- ``input_s``: one update's batch pulled through a fresh distributed iterator of the same dataset
  onto the devices;
- ``dispatch_s``: one call of a function running ``strategy.run`` of a constant, / steps_per_execution.

Not measured (None) for parameter_server (asynchronous: the coordinator schedules whole functions
on workers, and variables live on the ps tasks) and for co-tenant cells (their parts would contend
with the other tenants in unknown proportions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.spec.cell import Cell
from harness.worker.build.loops import ReductionCounter, make_gradients
from harness.worker.build.strategies import distribute
from harness.worker.timing import per_repetition

PART_WINDOW_S = 0.2
"""Target length of one timed window of a part (s)."""


def measurable(cell: Cell) -> bool:
    """Whether the parts of this cell's update can be isolated (see the module doc)."""
    return not cell.kind.coordinated and cell.tenants == 1


def _local_sum(strategy: Any, sink: Any) -> Any:
    """This worker's replicas' sink values added on the host side: a sync without a reduction."""
    import tensorflow as tf

    return tf.add_n([tf.identity(v) for v in strategy.experimental_local_results(sink)])


def _repeated(strategy: Any, sink: Any, replica_fn: Callable[..., None]) -> Callable[..., Any]:
    """tf.function(n, *args): n calls of ``strategy.run(replica_fn, args)`` in an in-graph loop."""
    import tensorflow as tf

    @tf.function(jit_compile=False)
    def repeated(n: Any, *args: Any) -> Any:
        for _ in tf.range(n):
            strategy.run(replica_fn, args=args)
        return _local_sum(strategy, sink)

    return repeated


def measure_parts(built: Any, cell: Cell, agree: Callable[[int], int] = lambda n: n,
                  window_s: float = PART_WINDOW_S) -> dict[str, float | None]:
    """compute_s, allreduce_s, input_s and dispatch_s of one update (s), or an empty dict when the
    cell's parts cannot be isolated. ``built``: the cell's
    :class:`harness.worker.measure.BuiltCell`."""
    import tensorflow as tf

    if not measurable(cell):
        return {}
    strategy, model = built.strategy, built.model
    with strategy.scope():
        sink = tf.Variable(0.0, trainable=False, synchronization=tf.VariableSynchronization.ON_READ,
                           aggregation=tf.VariableAggregation.SUM)
    variables = model.trainable_variables
    gradients = make_gradients(model, built.optimizer, cell, ReductionCounter())
    iterator = iter(distribute(strategy, built.input_fn(cell.effective_batch), cell))
    batch = next(iterator)

    def compute(x: Any, y: Any) -> None:
        loss, grads = gradients(x, y)
        sink.assign_add(loss + tf.add_n([tf.reduce_sum(g) for g in grads]))

    def allreduce() -> None:
        ctx = tf.distribute.get_replica_context()
        values = [tf.identity(tf.cast(tf.convert_to_tensor(v), tf.float32)) for v in variables]
        out = ctx.all_reduce(tf.distribute.ReduceOp.SUM, values)
        sink.assign_add(tf.add_n([tf.reshape(o, [-1])[0] for o in out]))

    def take(x: Any, y: Any) -> None:
        sink.assign_add(tf.cast(y[0], tf.float32))

    run_compute = _repeated(strategy, sink, compute)
    run_allreduce = _repeated(strategy, sink, allreduce)

    @tf.function(jit_compile=False)
    def pull(n: Any) -> Any:
        for _ in tf.range(n):
            strategy.run(take, args=next(iterator))
        return _local_sum(strategy, sink)

    @tf.function(jit_compile=False)
    def empty() -> Any:
        return strategy.run(lambda: tf.constant(0.0))

    def calls(n: int) -> None:
        out = None
        for _ in range(n):
            out = empty()
        strategy.experimental_local_results(out)[0].numpy()

    def looped(fn: Callable[..., Any], *args: Any) -> Callable[[int], None]:
        return lambda n: fn(tf.constant(n), *args).numpy()

    reduces = strategy.num_replicas_in_sync > 1
    return {
        "compute_s": per_repetition(looped(run_compute, *batch), window_s, agree)[0],
        "allreduce_s": per_repetition(looped(run_allreduce), window_s, agree)[0] if reduces else 0.0,
        "input_s": per_repetition(looped(pull), window_s, agree)[0],
        "dispatch_s": per_repetition(calls, window_s, agree)[0] / cell.steps_per_execution,
    }
