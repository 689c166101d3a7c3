"""Where an update's time goes: each part of a cell's update timed alone, in the cell's own process
after its timed windows, alternating with the cell's own update (what each part holds:
results/README.md; why: docs/explanation/measurement.md, "the step breakdown").

Each part is a ``tf.function`` holding an in-graph loop of n repetitions run one after another
(``parallel_iterations=1``), n calibrated so that a window lasts about ``window_s``. Rounds time
one window of the update and of every part in turn (:func:`harness.worker.timing.interleaved`); a
figure (s per update) is its median window / n over :data:`PART_ROUNDS` rounds, or up to
:data:`PART_SETS` sets of them while a part exceeds the update by more than the noise allows
(:data:`harness.formulas.breakdown.NOISE`). Results go to a per-replica sink variable (``ON_READ``:
no cross-replica reduction) so that nothing is pruned. ``dispatch_s`` is per step, i.e. one call /
steps_per_execution; ``allreduce_s`` is 0 with one replica; ``reduce_s`` is one scalar reduction
across replicas (what the loss and metric reductions pay), none with one replica.

A parameter-server cell has no parts of its own (the coordinator schedules whole functions): its
costs across the link are timed instead, each a function the coordinator schedules on a worker
(:func:`_ps_windows`). None for co-tenant cells (their parts would contend with the other tenants
unknowably)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.formulas.breakdown import PARTS, REFERENCE, excess, measurable
from harness.spec.cell import Cell
from harness.worker.collectives import first_elements, local_sum, replica_zeros
from harness.worker.timing import Timed, interleaved, stopwatch
from harness.worker.training.loops import ReductionCounter, make_gradients
from harness.worker.training.strategies import distribute

PART_WINDOW_S = 0.2
"""Target length of one timed window of a part (s)."""

PART_ROUNDS = 5
"""Rounds of :func:`harness.worker.timing.interleaved`: windows per part and of the update."""

PART_SETS = 3
"""Sets of PART_ROUNDS rounds at most: while a part exceeds the update by more than the timing
noise allowed (:func:`harness.formulas.breakdown.excess`), another set is run and the figures are
medians over all rounds (a disturbed window is outvoted; a part that really exceeds the update
still does)."""


def _repeated(
    strategy: Any,
    sink: Any,
    replica_fn: Callable[..., None],
    args: tuple[Any, ...] = (),
    inputs: Callable[[], Any] | None = None,
) -> Callable[[int], float]:
    """A window of n calls of ``strategy.run(replica_fn, args)`` in an in-graph loop (a
    tf.function), ending in a host sync of this worker's sink values (added on the host side: no
    reduction); its seconds. ``inputs``: each call's args drawn inside the loop instead (the next
    element of an iterator)."""
    import tensorflow as tf

    @tf.function(jit_compile=False)
    def repeated(n: Any, *args: Any) -> Any:
        for _ in tf.range(n):
            tf.autograph.experimental.set_loop_options(parallel_iterations=1)
            strategy.run(replica_fn, args=args if inputs is None else inputs())
        return local_sum(strategy, sink)

    return stopwatch(lambda n: repeated(tf.constant(n), *args).numpy())


def measure_parts(
    built: Any,
    cell: Cell,
    agree: Callable[[int], int] = lambda n: n,
    window_s: float = PART_WINDOW_S,
    rounds: int = PART_ROUNDS,
) -> dict[str, float | None]:
    """parts_step_s, compute_s, allreduce_s, input_s and dispatch_s, each in s per update (of a
    parameter-server cell, parts_step_s and :func:`_ps_windows`), or an empty dict when the cell's
    parts cannot be isolated. ``built``: the cell's :class:`harness.worker.measure.BuiltCell`; its
    trainer runs more updates here."""
    if not measurable(cell):
        return {}
    spe = cell.steps_per_execution
    update = Timed(lambda n: built.trainer.windows(n, 1)[0][0], unit=spe, warm=True)
    if not cell.kind.synchronous:
        return dict(interleaved({REFERENCE: update, **_ps_windows(built, spe)}, window_s, agree, rounds))

    def inconsistent(seconds: dict[str, float]) -> bool:
        """Whether a part exceeds the update by more than the timing noise allowed."""
        out = _per_update(seconds, spe)
        return bool(excess(out[REFERENCE], {k: out[k] for k in PARTS}))

    timed = {REFERENCE: update, **_part_windows(built, cell)}
    return dict(_per_update(interleaved(timed, window_s, agree, rounds, inconsistent, PART_SETS), spe))


def _per_update(seconds: dict[str, float], spe: int) -> dict[str, float]:
    """Per update: dispatch over a call's steps_per_execution (``spe``) updates; no all-reduce, 0."""
    return {
        **seconds,
        "allreduce_s": seconds.get("allreduce_s", 0.0),
        "dispatch_s": seconds["dispatch_s"] / spe,
    }


def _part_windows(built: Any, cell: Cell) -> dict[str, Timed]:
    """The windows of compute_s, input_s and dispatch_s, and with several replicas of allreduce_s
    and reduce_s: each a replica function repeated (:func:`_repeated`), its results into a sink."""
    import tensorflow as tf

    strategy, variables = built.strategy, built.model.trainable_variables
    sink = replica_zeros(strategy)
    gradients = make_gradients(built.model, built.optimizer, cell, ReductionCounter())
    iterator = iter(distribute(strategy, built.input_fn(cell.effective_batch), cell))
    batch = next(iterator)

    def compute(x: Any, y: Any) -> None:
        loss, grads = gradients(x, y)
        sink.assign_add(loss + first_elements(grads))

    def allreduce() -> None:
        ctx = tf.distribute.get_replica_context()
        values = [tf.identity(tf.cast(tf.convert_to_tensor(v), tf.float32)) for v in variables]
        out = ctx.all_reduce(tf.distribute.ReduceOp.SUM, values)
        sink.assign_add(first_elements(out))

    def take(x: Any, y: Any) -> None:
        sink.assign_add(tf.reduce_sum(tf.cast(y[0], tf.float32)))

    def reduce() -> None:
        ctx = tf.distribute.get_replica_context()
        sink.assign_add(ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.ones([])))

    # compute XLA-compiled where the step is (:func:`harness.worker.training.loops._execution`)
    compiled = tf.function(compute, jit_compile=True) if cell.jit_compile else compute
    timed = {
        "compute_s": Timed(_repeated(strategy, sink, compiled, batch)),
        "input_s": Timed(_repeated(strategy, sink, take, inputs=lambda: next(iterator))),
        "dispatch_s": Timed(_dispatch(strategy)),
    }
    if strategy.num_replicas_in_sync > 1:
        timed["allreduce_s"] = Timed(_repeated(strategy, sink, allreduce))
        timed["reduce_s"] = Timed(_repeated(strategy, sink, reduce))
    return timed


def _dispatch(strategy: Any) -> Callable[[int], float]:
    """A window of n calls of a tf.function running an empty replica function, synced once at the
    end: what a call costs the host."""
    import tensorflow as tf

    @tf.function(jit_compile=False)
    def empty() -> Any:
        return strategy.run(lambda: tf.constant(0.0))

    def calls(n: int) -> None:
        out = None
        for _ in range(n):
            out = empty()
        strategy.experimental_local_results(out)[0].numpy()

    return stopwatch(calls)


def _ps_windows(built: Any, spe: int) -> dict[str, Timed]:
    """The windows of ps_read_s and ps_update_s (s per update) of a parameter-server cell: an
    update's reads of every trainable variable from the ps tasks into a worker, and its update of
    every one on them from a worker (a zero added: the weights stay). The coordinator schedules
    calls of steps_per_execution (``spe``) reads (or updates) each, one after another inside a call
    and unrolled: a loop across devices pays round trips of its own control flow (8 ms per read of
    407 KB at 5 Gbit/s). A variable's read or update runs concurrently with the others', as in a
    training step."""
    import tensorflow as tf

    coordinator = tf.distribute.coordinator.ClusterCoordinator(built.strategy)  # the trainer's own
    variables = built.model.trainable_variables

    @tf.function(jit_compile=False)
    def read(zero: Any) -> Any:
        total = zero
        for _ in range(spe):
            with tf.control_dependencies([total]):
                total += tf.add_n([tf.reduce_sum(tf.cast(tf.identity(v), tf.float32)) for v in variables])
        return total

    @tf.function(jit_compile=False)
    def update(zero: Any) -> Any:
        done: list[Any] = []
        for i in range(spe):  # a new tensor of zeros per update, made on the worker: it travels
            with tf.control_dependencies(done):
                done = [v.assign_add(tf.fill(tf.shape(v), tf.cast(zero * i, v.dtype))) for v in variables]
        with tf.control_dependencies(done):
            return tf.identity(zero)

    zero = tf.constant(0.0)  # made once, outside the timed windows

    def scheduled(fn: Callable[[Any], Any]) -> Callable[[int], float]:
        def calls(n: int) -> None:
            pending = [coordinator.schedule(fn, args=(zero,)) for _ in range(n // spe)]
            coordinator.join()
            pending[-1].fetch()

        return stopwatch(calls)

    return {"ps_read_s": Timed(scheduled(read), unit=spe), "ps_update_s": Timed(scheduled(update), unit=spe)}
