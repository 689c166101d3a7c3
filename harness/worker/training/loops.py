"""LOOPS registry: training loops around one shared replica update with gradient accumulation.

One **update** = ``accum_steps`` (k) micro-batches of ``per_replica_batch`` examples per replica
(docs/explanation/accumulation.md, "One update, two loops").

Every loop builder takes ``(strategy, model, optimizer, input_fn, cell)`` (``input_fn(examples)``:
an infinite dataset of batches of that many examples) and returns a :class:`Trainer`:
``run(steps)`` trains ``steps`` updates (a multiple of steps_per_execution) and returns the last
update's loss, fetched to the host; ``windows(steps, n)`` runs n back-to-back windows of ``steps``
updates and returns their durations, each ending in a host sync and no other."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from harness.spec.cell import Cell
from harness.spec.models import chosen_loss
from harness.worker.faults import spin, window_slowdown
from harness.worker.timing import Stream
from harness.worker.training.strategies import distribute


@dataclass
class ReductionCounter:
    """Counts the cross-replica reductions a strategy emits, by wrapping its cross-device ops while
    TensorFlow traces: each top-level ``reduce``/``batch_reduce`` call while tracing an update is one
    reduction of its graph (the micro-batch phase counts k times: its body is traced k times);
    ``updates_traced`` keeps retracing from inflating it; MirroredStrategy traces the replica function
    once per local replica but reduces once, hence ``local_replicas``. The custom loop's loss reduce
    (once per call of steps_per_execution updates: ``calls["loss"]`` per ``calls_traced``) is counted
    where made: MirroredStrategy reduces a value bound for the host through a ReductionToOneDevice of
    its own (phase ``counted``)."""

    phase: str = "other"
    calls: dict[str, int] = field(
        default_factory=lambda: {"micro": 0, "apply": 0, "loss": 0, "other": 0, "counted": 0}
    )
    updates_traced: int = 0
    calls_traced: int = 0
    local_replicas: int = 1
    _depth: int = 0

    def attach(self, strategy: Any) -> ReductionCounter:
        try:
            self.local_replicas = len(strategy.extended.worker_devices)
        except (RuntimeError, AttributeError, ValueError):
            # the default strategy (one device, no device list to ask); a parameter-server
            # coordinator, whose update runs on one worker's replicas
            self.local_replicas = strategy.num_replicas_in_sync
        ops = getattr(strategy.extended, "_cross_device_ops", None)
        if ops is None:  # default / one-device strategies: nothing to reduce across
            return self
        for name in ("reduce_implementation", "batch_reduce_implementation"):
            setattr(ops, name, self._wrap(getattr(ops, name)))
        return self

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if self._depth == 0:
                self.calls[self.phase] += 1
            self._depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1

        return counted

    def per_update(self, accum_steps: int, steps_per_execution: int = 1) -> float | None:
        """Cross-replica reductions per optimizer update: the gradients' (micro-batch phase x
        accum_steps + apply phase) plus the loss's, one per call of ``steps_per_execution``
        updates; None before any update was traced."""
        if not self.updates_traced:
            return None
        updates = self.updates_traced / self.local_replicas
        loss = self.calls["loss"] / self.calls_traced / steps_per_execution if self.calls_traced else 0.0
        return (self.calls["micro"] * accum_steps + self.calls["apply"]) / updates + loss


LOSSES: dict[str, Callable[[Any], Any]] = {
    "sparse_categorical_crossentropy": lambda keras: keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=None
    ),
    "binary_crossentropy": lambda keras: keras.losses.BinaryCrossentropy(from_logits=True, reduction=None),
    "mse": lambda keras: keras.losses.MeanSquaredError(reduction=None),
}
"""A chosen loss (:func:`harness.spec.models.chosen_loss`) -> its per-example Keras loss."""


def output_units(model: Any) -> int:
    """The last dimension of the model's (first) output."""
    return int(model.outputs[0].shape[-1])


def make_gradients(
    model: Any, optimizer: Any, cell: Cell, counter: ReductionCounter
) -> Callable[[Any, Any], tuple[Any, list[Any]]]:
    """The replica function of an update's forward and backward passes on a (k x
    per_replica_batch)-example slice: k micro-batches, their gradients summed locally. Returns
    (this replica's share of the update's loss, the summed gradients); no cross-replica reduction."""
    import keras
    import tensorflow as tf

    loss_fn = LOSSES[chosen_loss(cell.loss, output_units(model))](keras)
    k = cell.accum_steps
    variables = model.trainable_variables

    def micro(x: Any, y: Any) -> tuple[Any, list[Any]]:
        counter.phase = "micro"
        with tf.GradientTape() as tape:
            logits = tf.cast(model(x, training=True), tf.float32)
            loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=cell.effective_batch)
            scaled = optimizer.scale_loss(loss)
        return loss, tape.gradient(scaled, variables)

    def gradients(x: Any, y: Any) -> tuple[Any, list[Any]]:
        if k == 1:
            return micro(x, y)
        # an explicit while loop: Keras's fit traces train_step with AutoGraph off
        xs = tf.reshape(x, [k, -1, *x.shape[1:]])
        ys = tf.reshape(y, [k, -1, *y.shape[1:]])

        def body(i: Any, loss: Any, grads: list[Any]) -> tuple[Any, Any, list[Any]]:
            loss_i, grads_i = micro(tf.gather(xs, i), tf.gather(ys, i))
            return i + 1, loss + loss_i, [g + gi for g, gi in zip(grads, grads_i, strict=True)]

        zeros = [tf.zeros_like(v) for v in variables]  # micro is traced once, in the body
        _, loss, grads = tf.while_loop(lambda i, *_: i < k, body, (tf.constant(0), tf.constant(0.0), zeros))
        return loss, grads

    return gradients


def make_update(
    strategy: Any, model: Any, optimizer: Any, cell: Cell
) -> tuple[ReductionCounter, Callable[[Any, Any], Any]]:
    """The replica function of one update on a (k x per_replica_batch)-example slice:
    :func:`make_gradients`, then ``optimizer.apply_gradients`` (its one cross-replica reduction and
    one optimizer step), with the counter of ``strategy``'s reductions it makes.

    The function returns this replica's share of the update's loss (summing shares over replicas
    gives the mean over the effective global batch)."""
    counter = ReductionCounter().attach(strategy)
    gradients = make_gradients(model, optimizer, cell, counter)
    variables = model.trainable_variables

    def update(x: Any, y: Any) -> Any:
        counter.updates_traced += 1
        loss, grads = gradients(x, y)
        counter.phase = "apply"
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        counter.phase = "other"
        return loss

    return counter, update


@dataclass(frozen=True)
class Trainer:
    """A ready training loop. ``run(steps) -> last loss``; ``windows(steps, n) -> (seconds, loss)``.

    With several workers, ``per_worker`` holds after ``windows`` each worker's own seconds per
    window (from its start barrier to its own host sync), gathered from every worker."""

    run: Callable[[int], float]
    windows: Callable[[int, int], tuple[list[float], float]]
    counter: ReductionCounter
    per_worker: list[list[float]] = field(default_factory=list)
    agree: Callable[[int], int] = lambda value: value
    """Every worker's copy of the chief's value (workers must agree on a window length)."""
    updates: list[int] = field(default_factory=lambda: [0])
    """``updates[0]``: optimizer updates run so far, counted by the caller of the training function
    (the coordinator under parameter_server)."""
    updates_by_worker: list[list[int]] = field(default_factory=list)
    """Parameter server: updates each worker ran in each window of the last ``windows`` call."""
    stream: Stream | None = None
    """Windows served one after another inside one running loop (:data:`harness.worker.timing.Stream`),
    for a loop whose every call has a costly set-up (``fit``: a data adapter and an iterator per
    call, 0.1-2 s measured): in turns, each window then costs one window, not a call."""
    jit_compile: Callable[[], bool | None] = lambda: None
    """Whether the training function is XLA-compiled, as built: the ``jit_compile`` of the
    ``tf.function`` of each update's step (ctl, parameter server: :func:`_execution`), or the value
    Keras resolved and built ``fit``'s step function with (read after the first call; before it,
    the compiled model's). None: not reported."""


def _check_steps(steps: int, spe: int) -> None:
    if steps <= 0 or steps % spe:
        raise ValueError(f"steps={steps} must be a positive multiple of steps_per_execution={spe}")


def timed_windows(
    run: Callable[[int], float], steps: int, n: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[list[float], float]:
    """n windows of ``run(steps)``; each ends with run's host sync, which bounds the next start."""
    seconds: list[float] = []
    loss = float("nan")
    for _ in range(n):
        t0 = clock()
        loss = run(steps)
        seconds.append(clock() - t0)
    return seconds, loss


def _cross_worker_sum(strategy: Any, values: Any) -> Any:
    """Sum a float32 vector over all workers (each worker's local replicas share its value)."""
    import tensorflow as tf

    local = len(strategy.extended.worker_devices)
    mine = tf.constant(values, tf.float32) / local
    return strategy.reduce(
        tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.identity(mine)), axis=None
    ).numpy()


def worker_rank(strategy: Any) -> int:
    """This worker's rank among a MultiWorkerMirrored cluster's training tasks: a ``chief`` task (if
    the cluster has one) is 0 and worker i is i + 1; otherwise worker i is i."""
    resolver = strategy.cluster_resolver
    if resolver.task_type == "chief":
        return 0
    return resolver.task_id + int("chief" in resolver.cluster_spec().as_dict())


def chief_agreement(strategy: Any, workers: int) -> Callable[[int], int]:
    """A function giving every worker of a MultiWorkerMirrored cluster of ``workers`` the chief's
    copy of an integer (a cross-worker sum of the chief's value and the others' zeros; with one
    worker, the integer itself): workers must agree on a window length, since their collectives
    must match."""
    if workers == 1:
        return lambda value: value

    def chiefs(value: int) -> int:
        mine = float(value) if worker_rank(strategy) == 0 else 0.0
        return round(_cross_worker_sum(strategy, [mine])[0])

    return chiefs


def cluster_windows(
    strategy: Any,
    run: Callable[[int], float],
    steps: int,
    n: int,
    workers: int,
    per_worker: list[list[float]],
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[float], float]:
    """n windows bounded by cross-worker barriers: every worker starts a window together, and a
    window ends when the slowest worker's host sync is done, so ``window_steps x effective_batch``
    global examples are counted over one common window. Each worker's own time (start barrier to
    its own sync) is gathered from every worker into ``per_worker``."""
    import numpy as np

    common: list[float] = []
    own: list[float] = []
    loss = float("nan")
    for _ in range(n):
        _cross_worker_sum(strategy, [1.0])  # the barrier every worker starts the window at
        t0 = clock()
        loss = run(steps)
        own.append(clock() - t0)
        _cross_worker_sum(strategy, [1.0])  # the window ends when the slowest worker's sync is done
        common.append(clock() - t0)
    index = worker_rank(strategy)
    slots = np.zeros(workers * n, np.float32)
    slots[index * n : (index + 1) * n] = own
    gathered = _cross_worker_sum(strategy, slots)
    per_worker[:] = [list(map(float, gathered[w * n : (w + 1) * n])) for w in range(workers)]
    return common, loss


def _execution(
    strategy: Any, update: Callable[[Any, Any], Any], spe: int, counter: ReductionCounter, jit_compile: bool
) -> Callable[[Any], Any]:
    """One training-function call: steps_per_execution updates in an in-graph loop; returns the last
    update's loss (summed over replicas). With ``jit_compile`` each replica's update is a
    ``tf.function(jit_compile=True)`` run by ``strategy.run``, as Keras compiles ``fit``'s step: XLA
    cannot compile the iterator's ``IteratorGetNext``, nor reach every replica's variables from one
    device ("Trying to access resource ... located in device CPU:1 from device CPU:0", on 2 logical
    CPUs). Without it the graph holds no inner function."""
    import tensorflow as tf

    on_replica = tf.function(update, jit_compile=True) if jit_compile else update

    def step(x: Any, y: Any) -> Any:
        return strategy.run(on_replica, args=(x, y))

    def execution(iterator: Any) -> Any:
        if spe > 1:  # (a Python branch: no empty while loop in the graph when spe is 1)
            for _ in tf.range(spe - 1):
                step(*next(iterator))
        last = step(*next(iterator))
        counter.calls_traced += 1
        counter.calls["loss"] += int(strategy.num_replicas_in_sync > 1)
        counter.phase = "counted"
        try:
            return strategy.reduce(tf.distribute.ReduceOp.SUM, last, axis=None)
        finally:
            counter.phase = "other"

    return execution


def build_ctl(
    strategy: Any, model: Any, optimizer: Any, input_fn: Callable[[int], Any], cell: Cell
) -> Trainer:
    """Custom loop: ``strategy.run`` inside one ``tf.function`` holding an in-graph loop of
    steps_per_execution updates; only the last update's loss is reduced across replicas.
    Under a coordinated strategy (parameter_server) the same function is scheduled through a
    ClusterCoordinator (:func:`build_coordinated`)."""
    import tensorflow as tf

    if not cell.kind.synchronous:
        return build_coordinated(strategy, model, optimizer, input_fn, cell)
    counter, update = make_update(strategy, model, optimizer, cell)
    spe = cell.steps_per_execution
    jit = cell.jit_compile
    execution = tf.function(_execution(strategy, update, spe, counter, jit), jit_compile=False)
    iterator = iter(distribute(strategy, input_fn(cell.effective_batch), cell))
    updates = [0]
    slow = window_slowdown()

    def run(steps: int) -> float:
        _check_steps(steps, spe)
        t0 = time.perf_counter()
        loss = None
        for _ in range(steps // spe):
            loss = execution(iterator)
        updates[0] += steps
        assert loss is not None, "a window runs at least one call"
        value = float(loss)
        if slow:  # test-only planted slowdown, inside the window (harness.worker.faults)
            spin(slow * (time.perf_counter() - t0))
        return value

    per_worker: list[list[float]] = []

    def windows(steps: int, n: int) -> tuple[list[float], float]:
        if cell.workers == 1:
            return timed_windows(run, steps, n)
        return cluster_windows(strategy, run, steps, n, cell.workers, per_worker)

    agree = chief_agreement(strategy, cell.workers)
    return Trainer(run, windows, counter, per_worker, agree, updates, jit_compile=lambda: jit)


def build_coordinated(
    strategy: Any, model: Any, optimizer: Any, input_fn: Callable[[int], Any], cell: Cell
) -> Trainer:
    """Parameter-server loop: the coordinator schedules training-function calls (steps_per_execution
    updates each) on whichever worker is free (``ClusterCoordinator.schedule``); a window of ``steps``
    updates ends when ``coordinator.join()`` returns and the last loss is fetched. Updates are
    asynchronous, so counted here. Each worker reads its own input pipeline (per-replica batches of
    per_replica_batch x accum_steps); each call returns its worker's index, fetched after the timed
    windows into ``updates_by_worker``."""
    import tensorflow as tf

    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    counter, update = make_update(strategy, model, optimizer, cell)
    spe = cell.steps_per_execution
    per_replica = cell.per_replica_batch * cell.accum_steps
    jit = cell.jit_compile
    body = _execution(strategy, update, spe, counter, jit)

    @tf.function(jit_compile=False)
    def execution(iterator: Any) -> Any:
        return body(iterator), tf.distribute.coordinator.experimental_get_current_worker_index()

    def per_worker_dataset() -> Any:
        return strategy.distribute_datasets_from_function(lambda context: input_fn(per_replica))

    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset))
    updates = [0]
    by_worker: list[list[int]] = []
    calls: list[list[Any]] = []  # each run's scheduled calls since the last windows began

    def run(steps: int) -> float:
        _check_steps(steps, spe)
        calls.append([coordinator.schedule(execution, args=(iterator,)) for _ in range(steps // spe)])
        coordinator.join()
        updates[0] += steps
        return float(calls[-1][-1].fetch()[0])  # the host sync that closes a window

    def windows(steps: int, n: int) -> tuple[list[float], float]:
        calls.clear()
        seconds, loss = timed_windows(run, steps, n)
        ran = [[int(r.fetch()[1]) for r in window] for window in calls]
        by_worker[:] = [[spe * window.count(i) for window in ran] for i in range(cell.workers)]
        return seconds, loss

    return Trainer(
        run, windows, counter, updates=updates, updates_by_worker=by_worker, jit_compile=lambda: jit
    )


def _fit_model(
    strategy: Any, model: Any, optimizer: Any, update: Callable[[Any, Any], Any], spe: int, jit_compile: bool
) -> Any:
    """``model`` wrapped so that ``fit``'s train step is the suite's ``update``, compiled in scope
    with ``steps_per_execution`` = ``spe`` and ``jit_compile`` (a bool, never Keras's ``"auto"``).
    ``built_jit_compile``: the ``jit_compile`` Keras built the train function with (its
    ``make_train_function`` reads the model's resolved ``jit_compile`` then); None until it is made."""
    import keras

    class Wrapped(keras.Model):
        def __init__(self, inner: Any) -> None:
            super().__init__(name=f"{inner.name}_fit")
            self.inner = inner
            self.built_jit_compile: bool | None = None

        def call(self, x: Any, training: bool = False) -> Any:
            return self.inner(x, training=training)

        def train_step(self, data: Any) -> dict[str, Any]:
            x, y = data
            # Keras averages per-replica outputs: return this replica's mean, not its share.
            return {"update_loss": update(x, y) * strategy.num_replicas_in_sync}

        def make_train_function(self, force: bool = False) -> Any:
            made: Any = getattr(self, "train_function", None)
            if made is not None and not force:
                return made
            super().make_train_function(force)
            self.built_jit_compile = bool(self.jit_compile)  # what the train function was built with
            function: Any = getattr(self, "train_function")  # noqa: B009 -- Keras sets it; typed Any

            def train_function(iterator: Any) -> Any:
                if not HELD_ITERATORS or HELD_ITERATORS[-1] is not iterator:
                    HELD_ITERATORS.append(iterator)
                return function(iterator)

            setattr(self, "train_function", train_function)  # noqa: B010
            return train_function

    with strategy.scope():
        wrapped = Wrapped(model)
        wrapped.compile(optimizer=optimizer, steps_per_execution=spe, jit_compile=jit_compile)
    return wrapped


HELD_ITERATORS: list[Any] = []
"""Every distributed iterator a ``fit`` call made, alive until the worker's ``os._exit``: when fit
returns, deallocating its iterator waits for the input pipeline's threads, 3-11 s measured for a
mirrored 2-replica cell after a streamed fit (the finishing turn was that late)."""


def _epoch_clock(
    begin: Callable[[], bool] | None = None, end: Callable[[float, float], None] | None = None
) -> Any:
    """A Keras callback stamping each epoch's end (s, perf_counter) after fetching its loss to the
    host (the sync closing a window). With ``begin`` and ``end`` it serves windows inside one ``fit``
    call: at each epoch's end it reports the epoch it timed to ``end``, then waits in ``begin()``
    for the next window (False: fit stops after this epoch)."""
    import keras

    class EpochClock(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.stamps: list[float] = []
            self.loss = float("nan")
            self.start: float | None = None

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.loss = float((logs or {})["update_loss"])
            self.stamps.append(time.perf_counter())
            if begin is None or end is None:
                return
            if self.start is not None:
                end(self.stamps[-1] - self.start, self.loss)
            if begin():
                self.start = time.perf_counter()
            else:
                self.model.stop_training = True

    return EpochClock()


STREAM_EPOCHS = 10**9
"""Epochs of a streamed ``fit`` call: more than any run asks; the stream ends it (stop_training)."""


def build_fit(
    strategy: Any, model: Any, optimizer: Any, input_fn: Callable[[int], Any], cell: Cell
) -> Trainer:
    """Keras ``model.fit`` with steps_per_execution and the suite's own train step (the same update
    as ``ctl``; Keras's built-in gradient accumulation fails under tf.distribute). A window is one
    epoch of ``steps`` updates inside a single ``fit`` call, after one untimed leading epoch; its end
    is timed in ``on_epoch_end`` after the epoch's loss is fetched to the host, so no sync is added
    inside a window."""
    counter, update = make_update(strategy, model, optimizer, cell)
    spe = cell.steps_per_execution
    wrapped = _fit_model(strategy, model, optimizer, update, spe, cell.jit_compile)

    dataset = input_fn(cell.effective_batch)
    updates = [0]

    def fit(steps: int, epochs: int, clock: Any) -> Any:
        _check_steps(steps, spe)
        wrapped.fit(
            dataset, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=[clock], shuffle=False
        )
        updates[0] += steps * len(clock.stamps)
        return clock

    def windows(steps: int, n: int) -> tuple[list[float], float]:
        # One extra leading epoch: its end bounds the first window, so fit's own set-up (iterator,
        # callbacks) is in no timed window.
        clock = fit(steps, n + 1, _epoch_clock())
        return [b - a for a, b in pairwise(clock.stamps)], clock.loss

    def run(steps: int) -> float:
        return fit(steps, 1, _epoch_clock()).loss

    def stream(steps: int, begin: Callable[[], bool], end: Callable[[float, float], None]) -> None:
        # One fit call: its first epoch untimed (fit's set-up), then one epoch per window begun.
        fit(steps, STREAM_EPOCHS, _epoch_clock(begin, end))

    def jit_compile() -> bool:
        built = wrapped.built_jit_compile
        return bool(wrapped.jit_compile) if built is None else built

    return Trainer(run, windows, counter, updates=updates, stream=stream, jit_compile=jit_compile)


LOOPS: dict[str, Callable[[Any, Any, Any, Callable[[int], Any], Cell], Trainer]] = {
    "ctl": build_ctl,
    "fit": build_fit,
}
