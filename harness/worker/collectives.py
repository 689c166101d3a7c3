"""All-reduce timing in this process, for one topology of ``--sweep collectives``. For each payload
(:func:`harness.spec.collectives.payloads`) every participant (global replica index k) holds
per-replica variables filled with k + 1; one call is ``ReplicaContext.all_reduce(SUM, [its
tensors])`` inside ``strategy.run`` (as the optimizer hands gradients over). A tf.function loops n
calls in-graph, each call's first element added to a per-replica sink (nothing is pruned); n is
calibrated to windows of ~``window_s``; the figure is the median of ``repeats`` windows / n
(:func:`harness.worker.timing.per_repetition`). A last checked call must give n(n+1)/2 in every
element (``max_rel_error``: the worst relative deviation). Every worker of a multi-worker cell runs
this same sequence, with the chief's n (``agree``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.spec.cell import Cell
from harness.spec.collectives import Payload, payloads
from harness.worker.timing import per_repetition


def replica_zeros(strategy: Any, shape: tuple[int, ...] = ()) -> Any:
    """A float32 variable of zeros of ``shape`` per replica (``ON_READ``: updates make no
    cross-replica reduction; a read sums the replicas')."""
    import tensorflow as tf

    with strategy.scope():
        return tf.Variable(
            tf.zeros(shape, tf.float32),
            trainable=False,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )


def local_sum(strategy: Any, sink: Any) -> Any:
    """This worker's replicas' ``sink`` values added on the host side: a sync without a reduction."""
    import tensorflow as tf

    return tf.add_n([tf.identity(v) for v in strategy.experimental_local_results(sink)])


def first_elements(tensors: list[Any]) -> Any:
    """The sum of each tensor's first element (float32): keeps every tensor computed in full (an
    op's output is made whole) at O(1) arithmetic of its own. A control dependency on them is not
    enough: with only that, the step breakdown's compute part took the CPU time of the forward pass
    alone (the backward pass was pruned)."""
    import tensorflow as tf

    return tf.add_n([tf.cast(tf.reshape(t, [-1])[0], tf.float32) for t in tensors])


def _filled(strategy: Any, shapes: tuple[tuple[int, ...], ...]) -> list[Any]:
    """Per-replica float32 variables of ``shapes``, replica k's filled with k + 1."""
    import tensorflow as tf

    variables = [replica_zeros(strategy, s) for s in shapes]

    def fill() -> None:
        ctx = tf.distribute.get_replica_context()
        k = tf.cast(ctx.replica_id_in_sync_group, tf.float32) + 1.0
        for v in variables:
            v.assign(tf.fill(v.shape, k))

    strategy.run(tf.function(fill))
    return variables


def measure_payload(
    strategy: Any, payload: Payload, sink: Any, agree: Callable[[int], int], window_s: float, repeats: int
) -> dict[str, Any]:
    """time_s of one all-reduce of ``payload`` and its sum check, on this worker."""
    import tensorflow as tf

    variables = _filled(strategy, payload.shapes)
    n = strategy.num_replicas_in_sync
    expected = n * (n + 1) / 2

    def reduce() -> list[Any]:
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, [v.read_value() for v in variables])

    @tf.function(jit_compile=False)
    def calls(count: Any) -> Any:
        for _ in tf.range(count):
            strategy.run(lambda: sink.assign_add(first_elements(reduce())))
        return local_sum(strategy, sink)

    @tf.function(jit_compile=False)
    def worst_error() -> Any:
        def replica() -> Any:
            return tf.reduce_max([tf.reduce_max(tf.abs(o - expected)) for o in reduce()])

        return tf.reduce_max(
            [tf.identity(e) for e in strategy.experimental_local_results(strategy.run(replica))]
        )

    seconds, count = per_repetition(lambda k: calls(tf.constant(k)).numpy(), window_s, agree, windows=repeats)
    return {
        "payload": payload.name,
        "tensors": len(payload.shapes),
        "bytes": payload.bytes,
        "time_s": seconds,
        "calls": count,
        "max_rel_error": float(worst_error().numpy()) / expected,
    }


def measure_collectives(
    strategy: Any, cell: Cell, max_bytes: int, agree: Callable[[int], int], window_s: float, repeats: int
) -> list[dict[str, Any]]:
    """One result per payload (see the module doc), in :func:`payloads` order."""
    sink = replica_zeros(strategy)
    return [measure_payload(strategy, p, sink, agree, window_s, repeats) for p in payloads(max_bytes)]
