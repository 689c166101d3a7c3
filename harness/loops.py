"""LOOPS registry: training loops. Each builds a ``run(steps) -> final loss`` callable.

``run(steps)`` trains ``steps`` optimizer steps (a multiple of steps_per_execution) and returns the
loss of the last step as a Python float: fetching it to the host is the window's closing sync.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.spec import Cell

RunSteps = Callable[[int], float]


def make_step(strategy: Any, model: Any, optimizer: Any, cell: Cell) -> Callable[[Any, Any], Any]:
    """One replica's training step: forward, loss averaged over the global batch, backward, update.

    ``optimizer.apply_gradients`` all-reduces the gradients across replicas (Keras's TF optimizer),
    so the step itself never divides by the replica count (that would be a silent error).
    """
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    global_batch = cell.global_batch

    def step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            logits = tf.cast(model(x, training=True), tf.float32)
            loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=global_batch)
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def build_ctl(strategy: Any, model: Any, optimizer: Any, dataset: Any, cell: Cell) -> RunSteps:
    """Custom loop: ``strategy.run`` inside one ``tf.function`` holding an in-graph loop of
    steps_per_execution steps; only the last step's loss is reduced across replicas."""
    import tensorflow as tf

    step = make_step(strategy, model, optimizer, cell)
    spe = cell.steps_per_execution

    @tf.function(jit_compile=False)
    def execution(iterator: Any) -> Any:
        for _ in tf.range(spe - 1):
            strategy.run(step, args=next(iterator))
        last = strategy.run(step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, last, axis=None)

    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    def run(steps: int) -> float:
        if steps <= 0 or steps % spe:
            raise ValueError(f"steps={steps} must be a positive multiple of steps_per_execution={spe}")
        loss = None
        for _ in range(steps // spe):
            loss = execution(iterator)
        return float(loss)

    return run


LOOPS: dict[str, Callable[[Any, Any, Any, Any, Cell], RunSteps]] = {
    "ctl": build_ctl,
}
