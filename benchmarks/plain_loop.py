"""A plain user's custom training loop on one device, timed the way a user would time it.

Reproduces, without any harness code, what the suite trains in the cells
``cnn/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak`` and
``dense/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak``
(harness/worker/training/{models,data,loops,strategies}.py, harness/worker/measure.py):

* the model: ``cnn`` (Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2, Flatten,
  Dense 10) or ``dense`` (Flatten, Dense 128 relu, Dense 10), on 28x28x1 inputs, float32, built
  after ``keras.utils.set_random_seed(0)``;
* SGD at learning rate 0.01, built on the trainable variables before the first trace; sparse
  categorical cross-entropy from logits, per example, averaged with
  ``tf.nn.compute_average_loss`` over the global batch of 64;
* synthetic data: a pool of 64 batches of 64 examples (4096) drawn by
  ``tf.random.stateless_uniform`` with seeds (0, 1) for x and (0, 2) for the labels, on the host,
  ``from_tensor_slices -> repeat -> prefetch(AUTOTUNE)``;
* the custom loop: one ``tf.function`` (no XLA) whose call runs 10 updates in an in-graph loop
  (9 in a ``tf.range`` loop, then the last, whose loss it returns), each update a gradient tape,
  ``tape.gradient`` and ``optimizer.apply_gradients``.

The suite runs these cells under TensorFlow's default strategy, whose ``run``,
``experimental_distribute_dataset`` and ``reduce`` pass their function's result, the dataset and
the value through unchanged (``_DefaultDistributionExtended`` in tensorflow/python/distribute/
distribute_lib.py), so a loop with no strategy at all builds the same graph.

Timing: one call (the trace), a probe window of 5 calls, calls per window chosen so a window
lasts about 0.2 s, 2 untimed warm-up windows, then back-to-back windows for about 3 s. Every window
ends by fetching the last call's loss to the host (``float(loss)``), which also bounds the next
window's start. The figure is the median window's examples per second
(calls x 10 updates x 64 examples / seconds).

Run as a script: ``python benchmarks/plain_loop.py MODEL`` (cnn|dense). Prints one JSON line:
``{"model", "examples_per_sec", "windows" (timed windows), "seconds" (their total)}``.
Needs only TensorFlow and Keras.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BATCH = 64
UPDATES_PER_CALL = 10
POOL_BATCHES = 64  # 4096 examples of 28x28x1 float32
LEARNING_RATE = 0.01
WINDOW_S, TIMED_S, WARMUP_WINDOWS, PROBE_CALLS = 0.2, 3.0, 2, 5


def build(name: str):
    import keras

    if name == "cnn":
        layers = [
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    elif name == "dense":
        layers = [keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    else:
        raise SystemExit(f"unknown model {name!r}: cnn or dense")
    return keras.Sequential([keras.Input((28, 28, 1)), *layers], name=name)


def main(name: str) -> dict[str, object]:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = build(name)
    optimizer = keras.optimizers.SGD(LEARNING_RATE)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    variables = model.trainable_variables

    with tf.device("/cpu:0"):
        x = tf.random.stateless_uniform((POOL_BATCHES, BATCH, 28, 28, 1), seed=(0, 1))
        y = tf.random.stateless_uniform((POOL_BATCHES, BATCH), seed=(0, 2), maxval=10, dtype=tf.int32)
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().prefetch(tf.data.AUTOTUNE)
    iterator = iter(data)

    def update(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=BATCH)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    @tf.function(jit_compile=False)
    def train(iterator):
        for _ in tf.range(UPDATES_PER_CALL - 1):
            update(*next(iterator))
        return update(*next(iterator))

    def window(calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            loss = train(iterator)
        float(loss)  # the host sync that ends the window
        return time.perf_counter() - start

    window(1)  # trace
    calls = max(1, round(WINDOW_S / (window(PROBE_CALLS) / PROBE_CALLS)))
    for _ in range(WARMUP_WINDOWS):
        window(calls)
    seconds: list[float] = []
    while sum(seconds) < TIMED_S or len(seconds) < 5:
        seconds.append(window(calls))
    median = statistics.median(seconds)
    examples = calls * UPDATES_PER_CALL * BATCH
    if not math.isfinite(float(train(iterator))):
        raise SystemExit("the loss is not finite")
    return {
        "model": name,
        "examples_per_sec": examples / median,
        "windows": len(seconds),
        "seconds": sum(seconds),
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(json.dumps(main(sys.argv[1])))
