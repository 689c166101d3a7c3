"""Fidelity: the harness's figure versus a minimal hand-written loop, side by side in one process.

The CNN at batch 64 on one device: the harness's ``default``-strategy cell (the same code path that
``python -m harness run`` times) and a plain ``tf.function`` loop a user would write (same model,
data, optimizer, steps per call). Windows of the same length alternate between the two so that
drift on a noisy machine hits both; the throughput ratio is the median of the per-pair ratios.
The harness must be within 5% of the hand-written loop. The mirrored 1-replica ratio is reported too
(extra_info) but not asserted: it measures MirroredStrategy's own overhead.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from harness.spec.cell import Cell
from harness.spec.training import LEARNING_RATE
from harness.worker.training.data import make_dataset
from harness.worker.training.models import MODELS

PAIRS = 9
WINDOW_STEPS = 200
SPE = 10
TOLERANCE = 0.05


def handwritten_loop(batch: int, seed: int) -> Callable[[int], float]:
    """The loop a user would write: no strategy, one tf.function of SPE steps."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    model = MODELS["cnn"]()
    optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    iterator = iter(make_dataset("synthetic", batch, seed))

    @tf.function
    def execution(it: Any) -> Any:
        loss = tf.constant(0.0)
        for _ in tf.range(SPE):
            x, y = next(it)
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    def run(steps: int) -> float:
        loss = None
        for _ in range(steps // SPE):
            loss = execution(iterator)
        return float(loss)

    return run


def window(run: Callable[[int], float]) -> float:
    t0 = time.perf_counter()
    run(WINDOW_STEPS)
    return time.perf_counter() - t0


def test_harness_matches_handwritten_loop(benchmark: Any) -> None:
    from harness.launch.system.platform import detect_platform
    from harness.worker.devices import configure_devices
    from harness.worker.measure import build_cell

    _, devices = configure_devices(detect_platform(), 1)
    runs = {
        "handwritten": handwritten_loop(64, seed=0),
        "harness": build_cell(
            Cell(model="cnn", strategy="default", batch=64, steps_per_execution=SPE), devices
        ).trainer.run,
        "mirrored_r1": build_cell(
            Cell(model="cnn", strategy="mirrored", batch=64, steps_per_execution=SPE), devices
        ).trainer.run,
    }
    for run in runs.values():  # trace, compile, warm up
        run(SPE)
        run(WINDOW_STEPS)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(PAIRS):
        for name, run in runs.items():
            times[name].append(window(run))
    ratio = {
        name: statistics.median(b / t for b, t in zip(times["handwritten"], times[name], strict=True))
        for name in ("harness", "mirrored_r1")
    }
    eps = {name: 64 * WINDOW_STEPS / statistics.median(ts) for name, ts in times.items()}
    benchmark.extra_info.update(
        {
            "harness_over_handwritten": ratio["harness"],
            "mirrored_r1_over_handwritten": ratio["mirrored_r1"],
            **{f"{name}_examples_per_sec": v for name, v in eps.items()},
            "pairs": PAIRS,
            "window_steps": WINDOW_STEPS,
            "batch": 64,
        }
    )
    print(
        f"\nhandwritten {eps['handwritten']:,.0f} ex/s, harness {eps['harness']:,.0f} ex/s "
        f"(ratio {ratio['harness']:.3f}), mirrored 1 replica {eps['mirrored_r1']:,.0f} ex/s "
        f"(ratio {ratio['mirrored_r1']:.3f}); medians of {PAIRS} alternating windows of "
        f"{WINDOW_STEPS} steps"
    )
    benchmark.pedantic(runs["harness"], args=(WINDOW_STEPS,), rounds=3, iterations=1)
    assert ratio["harness"] >= 1 - TOLERANCE, f"harness/handwritten = {ratio['harness']:.3f}"
