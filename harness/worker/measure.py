"""Measuring one cell in this process: build it, time its windows, check it, return its row
and window rows (:func:`run_cell`); or train it a fixed number of updates for ``verify``
(:func:`verify_cell`)."""

from __future__ import annotations

import hashlib
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from harness.contract.events import ProcessRow
from harness.contract.job import WorkerOptions, WorkerSettings
from harness.contract.records import CellRow, Checks, Status, WindowRow
from harness.contract.turns import Do
from harness.formulas.breakdown import measurable
from harness.results.measurement import Measurement, StepFlops, measured_row, window_rows
from harness.spec.cell import Cell
from harness.spec.models import chosen_loss
from harness.spec.training import LEARNING_RATE
from harness.worker import breakdown, profile
from harness.worker.checks import integrity
from harness.worker.devices import short_name
from harness.worker.energy import cell_energy_meter
from harness.worker.flops import count_step
from harness.worker.timing import Meter, Timings, measure, measure_in_turns
from harness.worker.training.data import make_dataset
from harness.worker.training.loops import LOOPS, Trainer, output_units
from harness.worker.training.models import builder_of, info_of
from harness.worker.training.strategies import effective_cross_device_ops, make_strategy
from harness.worker.turns import TurnClient

T = TypeVar("T")

KEPT: list[object] = []
"""Each measured cell's objects, alive until the worker's ``os._exit``: deallocating a tf.data
iterator waits for its pipeline's threads, 12-57 s measured for the last of 8 live CNN members on
2 cores (their record is then that late)."""


def weights_digest(model: Any) -> str:
    h = hashlib.sha256()
    for w in model.weights:
        h.update(w.numpy().tobytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class BuiltCell:
    """A cell ready to train (see :class:`harness.worker.training.loops.Trainer`)."""

    strategy: Any
    model: Any
    optimizer: Any
    trainer: Trainer
    startup_s: float
    input_fn: Callable[[int], Any]
    flops: StepFlops = field(default_factory=lambda: StepFlops())
    """The model's FLOPs counted from its traced step (:func:`harness.worker.flops.count_step`)."""

    def problems(self, cell: Cell, final_loss: float) -> list[str]:
        """What the integrity checks find after training (:func:`harness.worker.checks.integrity.check`)."""
        return integrity.check(
            self.strategy, cell, self.model, self.optimizer, final_loss, self.trainer.updates[0]
        )


def build_cell(
    cell: Cell, devices: list[str], seed: int = 0, mnist_path: str | None = None, strategy: Any = None
) -> BuiltCell:
    """Strategy (unless given), model and optimizer (in scope), input pipeline and training loop."""
    import keras

    keras.mixed_precision.set_dtype_policy(cell.precision)
    keras.utils.set_random_seed(seed)
    t0 = time.perf_counter()
    strategy = strategy or make_strategy(cell, devices)
    build = builder_of(cell.model, cell.per_replica_batch)
    with strategy.scope():
        model = build()
        optimizer = keras.optimizers.get(
            {"class_name": cell.optimizer, "config": {"learning_rate": LEARNING_RATE}}
        )
        if cell.precision == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        # Build now: a loss-scale optimizer traced unbuilt bakes its initial scale into the graph.
        optimizer.build(model.trainable_variables)

    info = info_of(cell.model, model)
    loss = chosen_loss(cell.loss, output_units(model))

    def input_fn(examples: int) -> Any:
        return make_dataset(cell.data, examples, seed, mnist_path, info, loss)

    trainer = LOOPS[cell.loop](strategy, model, optimizer, input_fn, cell)
    startup_s = time.perf_counter() - t0
    example = model.inputs[0]
    try:
        flops = count_step(build, cell, tuple(example.shape[1:]), str(example.dtype))
    except Exception as e:  # noqa: BLE001 -- a count must never fail the cell: the row keeps the analytic one
        flops = {"flops_note": f"the FLOP count failed: {type(e).__name__}: {str(e)[:300]}"}
    return BuiltCell(strategy, model, optimizer, trainer, startup_s, input_fn, flops)


def _gpu_memory(devices: list[str]) -> dict[str, Any]:
    """``physical_gpus``: the GPUs this process computes on (fewer than ``devices`` where they are
    split into logical ones: :meth:`harness.spec.protocol.Platform.logical_gpus`);
    ``gpu_memory_peak_mib``: the most TensorFlow's allocator held on any of ``devices`` so far
    (``get_memory_info``'s peak); ``gpu_memory_limit_mib``: each logical GPU's limit where the GPUs
    were split (:func:`harness.worker.devices.configure_devices`), else None."""
    import tensorflow as tf

    gpus = tf.config.get_visible_devices("GPU")
    peak = max(tf.config.experimental.get_memory_info(short_name(d))["peak"] for d in devices)
    configs = tf.config.get_logical_device_configuration(gpus[0]) if gpus else None
    limit = configs[0].memory_limit if configs and configs[0].memory_limit else None
    return {
        "physical_gpus": len(gpus),
        "gpu_memory_peak_mib": peak / 2**20,
        "gpu_memory_limit_mib": None if limit is None else float(limit),
    }


def run_cell(
    row: CellRow,
    cell: Cell,
    options: WorkerOptions,
    devices: list[str],
    device_type: str,
    strategy: Any = None,
    hosts: int = 1,
    ready: Callable[[], None] = lambda: None,
    turns: TurnClient | None = None,
) -> tuple[CellRow, list[WindowRow]]:
    """Build, time and check one cell in this process: (the worker's started row with the process's
    figures, window rows), made by :mod:`harness.results.measurement`. ``hosts``: machines the cell's
    workers span (CPU devices count one per host); ``ready``: called after the first call (co-tenants'
    barrier); ``turns``: a member of a group instance, timed in the turns its coordinator grants."""
    import keras

    settings = options.settings
    built = build_cell(cell, devices, settings.seed, options.mnist_path, strategy)
    # energy only where this process drives every device of the cell (GPUs: NVML; CPU: RAPL), read
    # around its own windows (in turns the others wait meanwhile)
    meter = (
        cell_energy_meter(devices[: cell.replicas], device_type) if cell.processes == 1 else (lambda: None)
    )
    timings, own, counts = _timings(built, cell, settings, ready, turns, meter)
    problems = built.problems(cell, timings.final_loss)
    # Everything the timed windows left, read before the parts: timing them trains more updates
    # (parts_step_s) and re-runs the trainer's windows.
    m = _measurement(built, cell, timings, problems, own, counts, device_type, hosts)
    parts, parts_error = _parts(built, cell, settings, device_type, timings) if not problems else ({}, "")
    keras.mixed_precision.set_dtype_policy("float32")
    KEPT.append(built)
    if turns is not None:  # the finishing turn is over: the others may go on
        turns.reply({"done": Do.FINISH})
        turns.close()
    gpu = _gpu_memory(devices[: cell.replicas]) if device_type == "GPU" else {}
    m = replace(m, parts=parts, parts_error=parts_error, jit_compile=built.trainer.jit_compile(), **gpu)
    return measured_row(row, cell, m), window_rows(cell, m)


def _measurement(
    built: BuiltCell,
    cell: Cell,
    timings: Timings,
    problems: list[str],
    own: list[list[float]],
    counts: list[list[int]],
    device_type: str,
    hosts: int,
) -> Measurement:
    """The cell's measurement as its timed windows left it (no parts yet); ``own`` and ``counts``:
    each worker's own seconds and updates of each timed window."""
    energy = timings.energy
    return Measurement(
        window_seconds=tuple(timings.window_seconds),
        window_starts=timings.window_starts,
        window_target_s=timings.target_s,
        window_steps=timings.window_steps,
        startup_s=built.startup_s,
        compile_s=timings.compile_s,
        final_loss=timings.final_loss,
        seed_loss=timings.seed_loss,
        problems=tuple(problems + integrity.idle_workers(counts)),
        effective_cross_device_ops=effective_cross_device_ops(built.strategy),
        allreduces_per_update=built.trainer.counter.per_update(cell.accum_steps, cell.steps_per_execution),
        weights_digest=weights_digest(built.model),
        device_kind=device_type,
        hosts=hosts,
        worker_seconds=tuple(map(tuple, own)),
        worker_updates=tuple(map(tuple, counts)),
        updates_run=built.trainer.updates[0],
        optimizer_iterations=int(built.optimizer.iterations.numpy()),
        joules=None if energy is None else energy.joules,
        joules_s=None if energy is None else energy.seconds,
        joules_updates=None if energy is None else energy.updates,
        flops=built.flops,
    )


def _append(into: list[list[T]], rows: list[list[T]]) -> None:
    """Each worker's new windows appended to its list in ``into``."""
    into.extend([] for _ in range(len(rows) - len(into)))
    for mine, new in zip(into, rows, strict=True):
        mine.extend(new)


def _timings(
    built: BuiltCell,
    cell: Cell,
    settings: WorkerSettings,
    ready: Callable[[], None],
    turns: TurnClient | None,
    meter: Meter,
) -> tuple[Timings, list[list[float]], list[list[int]]]:
    """Time the cell's windows back to back (:func:`measure`) or in granted turns
    (:func:`measure_in_turns`): (the timings, each worker's own seconds and updates of each timed
    window; without per-worker seconds, the windows')."""
    trainer = built.trainer
    per_worker: list[list[float]] = []
    updates_by_worker: list[list[int]] = []

    def keep() -> None:
        _append(per_worker, trainer.per_worker)
        _append(updates_by_worker, trainer.updates_by_worker)

    loop = (trainer.run, trainer.windows, cell.steps_per_execution, settings, time.perf_counter)
    if turns is None:
        timings = measure(*loop, trainer.agree, ready, meter)
        keep()
    else:
        timings = measure_in_turns(*loop, turns, trainer.agree, keep, trainer.stream, meter)
    skip = settings.warmup_windows
    own = [w[skip:] for w in per_worker] or [list(timings.window_seconds)]
    return timings, own, [w[skip:] for w in updates_by_worker]


def _parts(
    built: BuiltCell, cell: Cell, settings: WorkerSettings, device_type: str, timings: Timings
) -> tuple[dict[str, float | None], str]:
    """Where the update's time goes, when the protocol asks: on a GPU one profiled window
    (:func:`harness.worker.profile.measure_profile`), else the parts timed alone
    (:func:`harness.worker.breakdown.measure_parts`); a failure there is reported with the row,
    never fails the cell."""
    if not settings.breakdown or not measurable(cell):
        return {}, ""
    gpu = device_type == "GPU"
    try:
        if gpu:
            step_s = statistics.median(timings.window_seconds) / timings.window_steps
            return dict(profile.measure_profile(built, cell, step_s)), ""
        return breakdown.measure_parts(built, cell, built.trainer.agree), ""
    except Exception as e:  # noqa: BLE001 - any TensorFlow error: the row says it
        what = "device time not measured" if gpu else "parts not measured"
        return {}, f"{what}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def verify_cell(
    row: CellRow,
    cell: Cell,
    options: WorkerOptions,
    devices: list[str],
    strategy: Any = None,
    save: bool = True,
) -> tuple[CellRow, ProcessRow]:
    """Train ``options.verify_updates`` optimizer updates from the seed and check integrity; save the
    weights before and after to ``weights_dir/<hash of cell id>.npz`` (arrays before_i, after_i)."""
    import numpy as np

    assert options.verify_updates, "verify trains a fixed number of updates"
    built = build_cell(cell, devices, options.settings.seed, options.mnist_path, strategy)
    before = [w.numpy() for w in built.model.weights]
    loss = built.trainer.run(options.verify_updates)
    problems = built.problems(cell, loss)
    path = os.path.join(
        options.weights_dir or ".", hashlib.sha256(cell.id.encode()).hexdigest()[:16] + ".npz"
    )
    if save:  # (in a multi-worker cell only the chief writes)
        np.savez(
            path,
            **{f"before_{i}": w for i, w in enumerate(before)},
            **{f"after_{i}": w.numpy() for i, w in enumerate(built.model.weights)},
        )
    verified = replace(
        row,
        status=Status.INVALID if problems else Status.OK,
        reason="; ".join(problems),
        checks=Checks(final_loss=loss, weights_digest=weights_digest(built.model)),
        ran=replace(row.ran, effective_cross_device_ops=effective_cross_device_ops(built.strategy)),
    )
    return verified, {"weights_path": path}
