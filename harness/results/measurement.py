"""One process's row, as the worker makes it from what it measured (pure, no TensorFlow): the
typed :class:`~harness.contract.records.CellRow` and the flat
:class:`~harness.contract.records.WindowRow`s, from the worker's raw numbers (window seconds,
counts, checks) and the FLOPs counted from its traced step."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from harness.contract.columns import Estimate, flatten, unflatten, without_figures
from harness.contract.events import Facts
from harness.contract.job import WorkerSettings
from harness.contract.records import (
    Axes,
    Breakdown,
    CellRow,
    Checks,
    Energy,
    Execution,
    Flops,
    Machine,
    Memory,
    Spread,
    Status,
    Tenancy,
    Timing,
    Updates,
    WindowRow,
)
from harness.formulas import metrics, stats
from harness.spec.axes import AXES
from harness.spec.cell import Cell
from harness.spec.models import flops_per_example
from harness.spec.protocol import Protocol
from harness.spec.training import LEARNING_RATE, same_updates


def axes(cell: Cell) -> Axes:
    """What the cell is: its id, every axis (:data:`harness.spec.axes.AXES`, by its row's column)
    and the batch sizes it implies."""
    values: dict[str, Any] = {a.row_column: getattr(cell, a.row_column) for a in AXES}
    return Axes(
        cell_id=cell.id,
        **values,
        global_batch=cell.global_batch,
        effective_batch=cell.effective_batch,
        learning_rate=LEARNING_RATE,
    )


def cell_row(cell: Cell, protocol: Protocol) -> CellRow:
    """The row of what the cell is and how it is timed (known before it runs)."""
    return replace(
        _described(cell, WorkerSettings.of(protocol)),
        spread=Spread(min_processes=protocol.processes, max_processes=protocol.max_processes),
    )


def _described(cell: Cell, settings: WorkerSettings) -> CellRow:
    """The row of what the cell is and how its windows are timed (a process's: the parent sets the
    spread's bounds when it makes the cell's row, :func:`harness.results.aggregate.aggregate`)."""
    analytic = flops_per_example(cell.model)
    return CellRow(
        cell=axes(cell),
        flops=Flops(
            flops_per_example=analytic,
            flops_source="analytic" if analytic is not None else None,
            flops_analytic=analytic,
        ),
        timing=Timing(
            window_target_s=settings.window_s,
            repeats=settings.repeats,
            warmup_windows=settings.warmup_windows,
        ),
    )


def machine(facts: Facts | None) -> Machine | None:
    """Where a worker ran, from its fingerprint facts (None when none are known)."""
    if not facts:
        return None
    return Machine(
        device_kind=facts["device_type"],
        device_name=facts["device_name"],
        host_cpu=facts["host_cpu"],
        host_cores=facts["host_cores"],
        intra_op_threads=facts["intra_op_threads"],
        inter_op_threads=facts["inter_op_threads"],
        tf_version=facts["tf_version"],
        keras_version=facts["keras_version"],
        python_version=facts["python_version"],
        build_info=json.dumps(
            {
                k: facts.get(k)
                for k in ("cuda_version", "cudnn_version", "rocm_version", "nvidia_driver", "tensor_float_32")
            }
        ),
        env=json.dumps(facts["env"], sort_keys=True),
        fingerprint=facts["fingerprint"],
    )


def started_row(
    cell: Cell, settings: WorkerSettings, facts: Facts, cores: int | None, oversubscribed: bool | None
) -> CellRow:
    """The row a worker starts from: the cell, its facts, and the cores each worker has (None: the
    whole host); ``oversubscribed`` None means every worker asks for ``cores`` of the host's."""
    cores = cores or facts["host_cores"]
    if oversubscribed is None:
        oversubscribed = cores * cell.workers > facts["host_cores"]
    row = _described(cell, settings)
    return replace(
        row,
        machine=machine(facts),
        ran=replace(row.ran, cores_per_worker=cores, oversubscribed=oversubscribed),
    )


class StepFlops(TypedDict, total=False):
    """What counting a model's traced training step found (:func:`harness.worker.flops.count_step`):
    FLOPs per example, trainable parameters, the bytes of its gradients, and what the count could
    not see ("" when nothing); only ``flops_note`` when the count failed."""

    flops_per_example: float
    trainable_parameters: int
    gradient_bytes: int
    flops_note: str


@dataclass(frozen=True)
class Measurement:
    """What a worker measured in one timed cell, as raw numbers (seconds): ``window_seconds`` (each
    timed window's wall time), ``worker_seconds`` (each worker's own time of each window; else the
    windows), ``worker_updates`` (parameter server: each worker's updates per window), ``problems``
    (the integrity checks'), ``window_starts`` (host monotonic clock), ``joules`` over ``joules_s``
    seconds of windows of ``joules_updates`` updates, around this process's windows (None: no counter)."""

    window_seconds: tuple[float, ...]
    window_steps: int
    startup_s: float
    compile_s: float
    final_loss: float
    problems: tuple[str, ...]
    effective_cross_device_ops: str
    allreduces_per_update: float | None
    weights_digest: str
    device_kind: str
    hosts: int
    worker_seconds: tuple[tuple[float, ...], ...]
    worker_updates: tuple[tuple[int, ...], ...]
    updates_run: int
    optimizer_iterations: int
    joules: float | None
    window_starts: tuple[float, ...] = ()
    joules_s: float | None = None
    joules_updates: int | None = None
    window_target_s: float | None = None
    """The window length asked for (s) where it is not the protocol's (a turn)."""
    parts: Mapping[str, float | None] = field(default_factory=dict)
    """The step breakdown's columns the worker timed (s per update), by name."""
    parts_error: str = ""
    flops: StepFlops = field(default_factory=lambda: StepFlops())
    """The model's FLOPs counted from its traced step (:func:`harness.worker.flops.count_step`:
    flops_per_example, trainable_parameters, gradient_bytes, flops_note); empty when not counted."""
    jit_compile: bool | None = None
    """Whether the training function ran XLA-compiled, as the trainer reports it
    (:attr:`harness.worker.training.loops.Trainer.jit_compile`); None: not reported."""
    physical_gpus: int | None = None
    """The physical GPUs the process computed on (fewer than its replicas where each was split
    into logical GPUs); None on a CPU."""
    gpu_memory_peak_mib: float | None = None
    """The most memory TensorFlow held on any one of the process's GPUs (MiB); None on a CPU."""
    gpu_memory_limit_mib: float | None = None
    """Each logical GPU's memory limit (MiB); None on whole GPUs and on a CPU."""
    seed_loss: float | None = None
    """The loss of update ``same_updates(steps_per_execution)`` from the seed; None: not recorded."""


def counted_flops(flops: Flops, counted: StepFlops) -> Flops:
    """The FLOPs counted from the traced step (a count of 0, or none, keeps the analytic one and
    says why)."""
    sizes = replace(
        flops,
        trainable_parameters=counted.get("trainable_parameters"),
        gradient_bytes=counted.get("gradient_bytes"),
    )
    if not counted.get("flops_per_example"):
        note = counted.get("flops_note") or "no matmul or convolution found in the traced step"
        return replace(sizes, flops_note=f"analytic FLOPs: {note}")
    return replace(
        sizes,
        flops_per_example=round(counted["flops_per_example"]),
        flops_source="counted",
        flops_note=counted.get("flops_note") or "",
    )


def _window_throughputs(cell: Cell, m: Measurement) -> tuple[int, list[float]]:
    """(examples per window, each timed window's examples/s)."""
    examples = m.window_steps * cell.effective_batch
    return examples, [metrics.throughput(examples, s) for s in m.window_seconds]


def _straggler_ratio(cell: Cell, m: Measurement) -> float | None:
    """Parameter server: update imbalance; one process: 1.0. Synchronous multi-worker cells: None,
    since every worker's window ends at the same all-reduce, so a slow worker cannot show."""
    if m.worker_updates:
        return metrics.update_imbalance(m.worker_updates)
    if len(m.worker_seconds) > 1 and cell.kind.synchronous:
        return None
    return metrics.straggler_ratio(m.worker_seconds)


def _ran(ran: Execution, cell: Cell, m: Measurement) -> Execution:
    """``ran`` with what the process ran: the all-reduce, XLA, the devices and hosts it computed on."""
    cpu = m.device_kind == "CPU"
    return replace(
        ran,
        effective_cross_device_ops=m.effective_cross_device_ops,
        jit_compile=m.jit_compile,
        device_count=m.hosts if cpu else m.physical_gpus or cell.devices,
        logical_devices=(cpu and cell.devices > m.hosts)  # local workers share a CPU
        or (m.physical_gpus is not None and m.physical_gpus < cell.replicas),  # logical GPUs
        hosts=m.hosts,
    )


def measured_row(row: CellRow, cell: Cell, m: Measurement) -> CellRow:
    """``row`` (the worker's :func:`started_row`) with one process's figures (an invalid process
    reports no figure of any kind)."""
    _, rates = _window_throughputs(cell, m)
    median = metrics.median(rates)
    reductions = m.allreduces_per_update
    batch = cell.effective_batch
    out = replace(
        row,
        status=Status.INVALID if m.problems else Status.OK,
        reason="; ".join(m.problems),
        examples_per_sec=Estimate(median),
        tenancy=Tenancy(  # alone: one tenant
            tenant_examples_per_sec_min=median,
            tenant_examples_per_sec_max=median,
            tenant_share_min=1.0 if median else None,
        ),
        spread=replace(row.spread, cv_within_process=stats.cv(rates)),
        timing=replace(
            row.timing,
            window_steps=m.window_steps,
            repeats=len(m.window_seconds),
            startup_s=m.startup_s,
            compile_s=m.compile_s,
            window_target_s=m.window_target_s or row.timing.window_target_s,
        ),
        ran=_ran(row.ran, cell, m),
        updates=Updates(
            optimizer_updates_per_sec=median / batch,
            allreduces_per_update=reductions,
            allreduces_per_example=None if reductions is None else reductions / batch,
            straggler_ratio=_straggler_ratio(cell, m),
            updates_run=m.updates_run,
            optimizer_iterations=m.optimizer_iterations,
        ),
        energy=Energy(
            energy_j_per_example=None
            if m.joules is None or not m.joules_updates
            else m.joules / (m.joules_updates * batch),
            gpu_watts=None if m.joules is None or not m.joules_s else m.joules / m.joules_s,
        ),
        checks=Checks(
            final_loss=m.final_loss,
            seed_loss=m.seed_loss,
            seed_updates=None if m.seed_loss is None else same_updates(cell.steps_per_execution),
            weights_digest=m.weights_digest,
        ),
        memory=Memory(gpu_memory_peak_mib=m.gpu_memory_peak_mib, gpu_memory_limit_mib=m.gpu_memory_limit_mib),
        breakdown=unflatten(  # the parts the worker timed, by column
            Breakdown,
            {
                **flatten(row.breakdown),
                **m.parts,
                "bound_reason": m.parts_error or row.breakdown.bound_reason,
            },
        ),
        flops=counted_flops(row.flops, m.flops),
    )
    return without_figures(out) if m.problems else out


def window_rows(cell: Cell, m: Measurement) -> list[WindowRow]:
    """One row per worker and timed window: the window's time, start and throughput, the worker's
    own time (or, under the parameter server, the updates that worker ran in it)."""
    examples, rates = _window_throughputs(cell, m)
    starts: list[float | None] = list(m.window_starts) or [None] * len(rates)
    workers = len(m.worker_updates) or len(m.worker_seconds)
    return [
        WindowRow(
            cell_id=cell.id,
            window_steps=m.window_steps,
            examples=examples,
            worker=w,
            repeat=i,
            window_s=s,
            start_s=t,
            examples_per_sec=r,
            # the coordinator's windows, split by the updates each worker ran
            worker_s=None if m.worker_updates else m.worker_seconds[w][i],
            **({"worker_updates": m.worker_updates[w][i]} if m.worker_updates else {}),
        )
        for w in range(workers)
        for i, (s, t, r) in enumerate(zip(m.window_seconds, starts, rates, strict=True))
    ]
