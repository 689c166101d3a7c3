"""Why is MirroredStrategy on one GPU faster than no strategy? Input placement, measured in one process.

    python -m benchmarks.input_placement [--model cnn] [--batch 256] [--rounds 12] [--window-s 0.3]

Builds the suite's own cells (:func:`harness.worker.measure.build_cell`: the same model, SGD, data
and custom loop as ``run``) for ``default``, ``one_device`` and ``mirrored`` on one device, plus
``default`` with its input copied to the device ahead of the step (``copy_to_device`` then
``prefetch`` on the device: what ``experimental_distribute_dataset`` does for the two strategies),
all in this one process, and times windows of each in round-robin order (a rotation per round), so
each ratio compares windows seconds apart on the same machine. Prints each variant's median
examples/s over the rounds and its ratio to ``default``: the median of the per-round ratios with
their [min, max]. One process, so the ratios carry no process-to-process spread: a look, not a
verdict. Run on a GPU host; on a CPU-only host every variant runs on the CPU.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

VARIANTS = ("default", "default+device_prefetch", "one_device", "mirrored")


def _trainers(model: str, batch: int) -> dict[str, Callable[[int], float]]:
    """Each variant's ``run(steps) -> loss`` (a host sync at its end)."""
    import tensorflow as tf

    from harness.spec.cell import Cell
    from harness.worker.measure import build_cell
    from harness.worker.training.loops import build_ctl

    gpus = tf.config.list_logical_devices("GPU")
    device = gpus[0].name if gpus else tf.config.list_logical_devices("CPU")[0].name
    built = {
        name: build_cell(Cell(model=model, strategy=name, batch=batch), [device])
        for name in ("default", "one_device", "mirrored")
    }
    plain = built["default"]

    def on_device(examples: int) -> Any:
        ds = plain.input_fn(examples).apply(tf.data.experimental.copy_to_device(device))
        with tf.device(device):
            return ds.prefetch(2)

    cell = Cell(model=model, strategy="default", batch=batch)
    with tf.device(device):
        prefetched = build_ctl(plain.strategy, plain.model, plain.optimizer, on_device, cell)
    runs = {name: b.trainer.run for name, b in built.items()}
    runs["default+device_prefetch"] = prefetched.run
    return {v: runs[v] for v in VARIANTS}


def _steps_for(run: Callable[[int], float], window_s: float, spe: int) -> int:
    """Steps (a multiple of ``spe``) that take about ``window_s`` seconds, after a warm-up."""
    run(spe)
    steps = spe
    while True:
        t0 = time.perf_counter()
        run(steps)
        if time.perf_counter() - t0 >= window_s / 4 or steps >= 10**6:
            return max(spe, int(steps * window_s / max(time.perf_counter() - t0, 1e-6)) // spe * spe)
        steps *= 4


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="cnn", help="a built-in model. Default: cnn")
    p.add_argument("--batch", type=int, default=256, help="examples per step. Default: 256")
    p.add_argument("--rounds", type=int, default=12, help="windows of each variant. Default: 12")
    p.add_argument("--window-s", type=float, default=0.3, help="seconds per window. Default: 0.3")
    args = p.parse_args(argv)
    runs = _trainers(args.model, args.batch)
    steps = {v: _steps_for(run, args.window_s, 10) for v, run in runs.items()}
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(args.rounds):
        for v in VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]:
            t0 = time.perf_counter()
            runs[v](steps[v])
            rates[v].append(steps[v] * args.batch / (time.perf_counter() - t0))
    print(
        f"{args.model}, batch {args.batch}, {args.rounds} rounds of ~{args.window_s} s windows, one process"
    )
    for v in VARIANTS:
        ratios = [a / b for a, b in zip(rates[v], rates["default"], strict=True)]
        print(
            f"{v:<26} {statistics.median(rates[v]):>12,.0f} examples/s   x default "
            f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
