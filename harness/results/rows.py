"""Every cell row is assembled here, as the typed :class:`~harness.contract.records.CellRow` (and
the flat :class:`~harness.contract.records.WindowRow`). Pure, no TensorFlow; both sides use it.

- :func:`cell_row` (:func:`axes`) and :func:`machine`: what the cell is and where it ran;
- :func:`started_row`: those plus the worker's cores, when the worker starts the cell;
- :class:`Measurement` -> :func:`measured_row` and :func:`window_rows`: one process's figures
  from the worker's raw numbers (window seconds, counts, checks);
- :func:`combine`: one pass of a co-tenant cell from its tenants' rows (over their common span);
- :func:`with_shared`: one process of a cell with a co-tenant from another framework, from its turns;
- :func:`aggregate`: the cell's row from its processes (one per pass): the figure, its CI, CVs,
  and the facts they must agree on (:func:`agreed_jit`);
- :func:`not_measured_row`: an unsupported or failed cell;
- :func:`with_ratios`: scaling efficiency and co-tenancy ratio, with CIs, against the run's rows;
- :func:`with_peak`: the run's peak for the cell's dtype and cores, and mfu;
- :func:`with_history`: the figure's CI widened to the spread of earlier runs' figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict

from harness.contract.columns import Estimate, finite, flatten, leaves, unflatten, without_figures
from harness.contract.events import Facts
from harness.contract.job import WorkerSettings
from harness.contract.records import (
    Axes,
    CellRow,
    Checks,
    Energy,
    Flops,
    Foreign,
    Machine,
    Memory,
    Spread,
    Status,
    Tenancy,
    Timing,
    Updates,
    Utilization,
    WindowRow,
)
from harness.contract.tenant import TenantFacts
from harness.formulas import breakdown, metrics, stats
from harness.formulas.turns import Turn
from harness.formulas.turns import clean as turns_clean
from harness.spec.axes import COMPUTE_DTYPE
from harness.spec.cell import Cell
from harness.spec.frameworks import together_key
from harness.spec.models import flops_per_example
from harness.spec.protocol import Protocol

LEARNING_RATE = 0.01

OPTIMIZER = f"SGD(learning_rate={LEARNING_RATE})"


def axes(cell: Cell) -> Axes:
    """What the cell is: its id and every axis."""
    return Axes(
        cell_id=cell.id,
        model=cell.model,
        loss=cell.loss,
        data=cell.data,
        strategy=cell.strategy,
        cross_device_ops=cell.cross_device_ops,
        communication=cell.communication,
        replicas=cell.replicas,
        workers=cell.workers,
        ps=cell.ps,
        tenants=cell.tenants,
        tenant_framework=cell.tenant_framework,
        per_replica_batch=cell.per_replica_batch,
        global_batch=cell.global_batch,
        effective_batch=cell.effective_batch,
        accum_steps=cell.accum_steps,
        loop=cell.loop,
        steps_per_execution=cell.steps_per_execution,
        precision=cell.precision,
        xla=cell.xla,
        scaling=cell.scaling,
        optimizer=OPTIMIZER,
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
    spread's bounds when it makes the cell's row, :func:`aggregate`)."""
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
    """What a worker measured in one timed cell, as raw numbers (times in seconds).

    ``window_seconds``: each timed window's wall time; ``worker_seconds``: each worker's own time
    of each window (multi-worker cells; else the windows themselves); ``worker_updates``: the
    updates each worker ran in each window (parameter server; else empty); ``problems``: what the
    integrity checks found; ``window_starts``: each window's start on the host's monotonic clock;
    ``joules``: energy over ``joules_s`` seconds around the timed windows (None: no counter).
    """

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
    window_target_s: float | None = None
    """The window length asked for (s) where it is not the protocol's (a turn)."""
    parts: Mapping[str, float | None] = field(default_factory=dict)
    parts_error: str = ""
    flops: StepFlops = field(default_factory=lambda: StepFlops())
    """The model's FLOPs counted from its traced step (:func:`harness.worker.flops.count_step`:
    flops_per_example, trainable_parameters, gradient_bytes, flops_note); empty when not counted."""
    jit_compile: bool | None = None
    """Whether the training function ran XLA-compiled, as the trainer reports it
    (:attr:`harness.worker.build.loops.Trainer.jit_compile`); None: not reported."""
    physical_gpus: int | None = None
    """The physical GPUs the process computed on (fewer than its replicas where each was split
    into logical GPUs); None on a CPU."""
    gpu_memory_peak_mib: float | None = None
    """The most memory TensorFlow held on any one of the process's GPUs (MiB); None on a CPU."""
    gpu_memory_limit_mib: float | None = None
    """Each logical GPU's memory limit (MiB); None on whole GPUs and on a CPU."""


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
    return examples, metrics.window_throughputs(m.window_seconds, examples)


def _straggler_ratio(cell: Cell, m: Measurement) -> float | None:
    """Parameter server: update imbalance; one process: 1.0. Synchronous multi-worker cells: None,
    since every worker's window ends at the same all-reduce, so a slow worker cannot show."""
    if m.worker_updates:
        return metrics.update_imbalance(m.worker_updates)
    if len(m.worker_seconds) > 1 and cell.kind.synchronous:
        return None
    return metrics.straggler_ratio(m.worker_seconds)


def measured_row(row: CellRow, cell: Cell, m: Measurement) -> CellRow:
    """``row`` (the worker's :func:`started_row`) with one process's figures (an invalid process
    reports no figure of any kind)."""
    _examples, rates = _window_throughputs(cell, m)
    median = metrics.median(rates)
    reductions = m.allreduces_per_update
    batch = cell.effective_batch
    out = replace(
        row,
        status=Status.INVALID if m.problems else Status.OK,
        reason="; ".join(m.problems),
        examples_per_sec=Estimate(median),
        tenancy=alone_tenancy(median),
        spread=replace(row.spread, cv_within_process=stats.cv(rates)),
        timing=replace(
            row.timing,
            window_steps=m.window_steps,
            repeats=len(m.window_seconds),
            startup_s=m.startup_s,
            compile_s=m.compile_s,
            window_target_s=row.timing.window_target_s if m.window_target_s is None else m.window_target_s,
        ),
        ran=replace(
            row.ran,
            effective_cross_device_ops=m.effective_cross_device_ops,
            jit_compile=m.jit_compile,
            device_count=m.hosts if m.device_kind == "CPU" else m.physical_gpus or cell.devices,
            logical_devices=(m.device_kind == "CPU" and cell.devices > m.hosts)  # local workers share a CPU
            or (m.physical_gpus is not None and m.physical_gpus < cell.replicas),  # logical GPUs
            hosts=m.hosts,
        ),
        updates=Updates(
            optimizer_updates_per_sec=median / batch,
            allreduces_per_update=reductions,
            allreduces_per_example=None if reductions is None else reductions / batch,
            straggler_ratio=_straggler_ratio(cell, m),
            updates_run=m.updates_run,
            optimizer_iterations=m.optimizer_iterations,
        ),
        energy=Energy(
            energy_j_per_example=None if m.joules is None else m.joules / (m.updates_run * batch),
            gpu_watts=None if m.joules is None or not m.joules_s else m.joules / m.joules_s,
        ),
        checks=Checks(final_loss=m.final_loss, weights_digest=m.weights_digest),
        memory=Memory(gpu_memory_peak_mib=m.gpu_memory_peak_mib, gpu_memory_limit_mib=m.gpu_memory_limit_mib),
        breakdown=replace(
            row.breakdown,
            parts_step_s=m.parts.get("parts_step_s"),
            compute_s=m.parts.get("compute_s"),
            allreduce_s=m.parts.get("allreduce_s"),
            input_s=m.parts.get("input_s"),
            dispatch_s=m.parts.get("dispatch_s"),
            profiled_step_s=m.parts.get("profiled_step_s"),
            device_s=m.parts.get("device_s"),
            collective_s=m.parts.get("collective_s"),
            input_wait_s=m.parts.get("input_wait_s"),
            host_s=m.parts.get("host_s"),
            bound_reason=m.parts_error or row.breakdown.bound_reason,
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


def not_measured_row(
    cell: Cell, protocol: Protocol, status: Status, reason: str, facts: Facts | None
) -> CellRow:
    """A row for a cell that produced no figures (unsupported, failed)."""
    return replace(cell_row(cell, protocol), machine=machine(facts), status=status, reason=reason)


def _efficiency_key(a: Axes) -> tuple[object, ...]:
    """What a row shares with its 1-device baseline (whose cross-device op and communication are
    "none": one device makes no reduce)."""
    return (
        a.model,
        a.data,
        a.strategy,
        a.loop,
        a.steps_per_execution,
        a.precision,
        a.xla,
        a.accum_steps,
        a.tenants,
    )


def _alone_key(a: Axes) -> tuple[object, ...]:
    """What a co-tenant cell shares with the same cell alone: every axis but the tenants."""
    return (*_efficiency_key(a)[:-1], a.cross_device_ops, a.communication, a.replicas, a.workers, a.ps)


def _alone_key_batch(a: Axes) -> tuple[object, ...]:
    return (*_alone_key(a), a.per_replica_batch, a.scaling)


def find_alone(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    """The ok row of the same cell with one tenant (co-tenancy's reference)."""
    key = _alone_key_batch(row.cell)
    for other in rows:
        if other.status == Status.OK and other.cell.tenants == 1 and _alone_key_batch(other.cell) == key:
            return other
    return None


def find_baseline(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    """The ok 1-device row of the same configuration: same per-replica batch (weak scaling) or same
    global batch (strong scaling)."""

    def key(a: Axes) -> tuple[object, ...]:
        batch = a.global_batch if row.cell.scaling == "strong" else a.per_replica_batch
        return (*_efficiency_key(a), batch)

    for other in rows:
        if (
            other.status == Status.OK
            and other.cell.replicas * other.cell.workers == 1
            and key(other.cell) == key(row.cell)
        ):
            return other
    return None


def alone_tenancy(examples_per_sec: float | None) -> Tenancy:
    """The tenant figures of a cell that ran alone (one tenant)."""
    return Tenancy(
        tenant_examples_per_sec_min=examples_per_sec,
        tenant_examples_per_sec_max=examples_per_sec,
        tenant_share_min=1.0 if examples_per_sec else None,
    )


def common_span(windows: Sequence[Sequence[WindowRow]]) -> tuple[float, float]:
    """(start, end) on the host's monotonic clock in which every tenant was timing: from the
    latest first-window start to the earliest last-window end."""
    start = max(min(_start(w) for w in ws) for ws in windows)
    end = min(max(_start(w) + w["window_s"] for w in ws) for ws in windows)
    return start, end


def _start(window: WindowRow) -> float:
    """A window's start (s), which a TensorFlow worker's window always has."""
    start = window.get("start_s")
    if start is None:
        raise TypeError(f"a window of {window.get('cell_id')} has no start_s")
    return start


def _rate_in_span(windows: Sequence[WindowRow], start: float, end: float) -> float | None:
    """Examples/s of one tenant over [start, end]: each window counts with the part of it inside
    the span (its examples spread evenly over its time); None when no window overlaps it."""
    examples = seconds = 0.0
    for w in windows:
        begun = _start(w)
        overlap = min(end, begun + w["window_s"]) - max(start, begun)
        if overlap > 0:
            examples += w["examples"] * overlap / w["window_s"]
            seconds += overlap
    return examples / seconds if seconds > 0 else None


def agreed_jit(rows: Sequence[CellRow]) -> bool | None:
    """``jit_compile`` where every row that reports it agrees; None where they differ or none
    does (a process that reported nothing, e.g. a failed one or one from an older suite, is left
    out)."""
    values = {r.ran.jit_compile for r in rows} - {None}
    return values.pop() if len(values) == 1 else None


def _with_jit(row: CellRow, rows: Sequence[CellRow]) -> CellRow:
    return replace(row, ran=replace(row.ran, jit_compile=agreed_jit(rows)))


def combine(
    rows: list[CellRow], windows: list[list[WindowRow]], effective_batch: int
) -> tuple[CellRow, list[WindowRow]]:
    """One pass of a co-tenant cell: its row and window rows from each tenant's.

    The aggregate counts only what ran at the same time: each tenant's examples over the span where
    every tenant was timing (:func:`common_span`; a window partly inside counts in proportion), so a
    tenant that finished early does not lend the others its devices. GPU energy per example: the tenants' mean power (they
    meter the same devices) over the aggregate throughput."""
    tagged = [WindowRow(**{**w, "worker": i}) for i, ws in enumerate(windows) for w in ws]
    bad = next(((i, r) for i, r in enumerate(rows) if r.status != Status.OK), None)
    if bad is not None:
        i, r = bad
        reason = f"tenant {i} of {len(rows)}: {r.reason}"
        return without_figures(replace(_with_jit(r, rows), reason=reason)), tagged
    start, end = common_span(windows)
    rates = [_rate_in_span(ws, start, end) for ws in windows]
    if any(r is None for r in rates):
        why = "co-tenants did not time together: no span in which every tenant was timing"
        return without_figures(replace(_with_jit(rows[0], rows), status=Status.INVALID, reason=why)), tagged
    own = [r for r in rates if r is not None]
    aggregate = sum(own)
    watts = [w for w in (r.energy.gpu_watts for r in rows) if w is not None]
    power = sum(watts) / len(watts) if len(watts) == len(rows) else None
    first = _with_jit(rows[0], rows)
    out = replace(
        first,
        examples_per_sec=Estimate(aggregate),
        spread=replace(
            first.spread, cv_within_process=max(_number(r.spread.cv_within_process) for r in rows)
        ),
        updates=replace(
            first.updates,
            optimizer_updates_per_sec=aggregate / effective_batch,
            straggler_ratio=max(own) / min(own),
        ),
        tenancy=Tenancy(
            tenant_examples_per_sec_min=min(own),
            tenant_examples_per_sec_max=max(own),
            tenant_share_min=min(own) / aggregate,
        ),
        energy=Energy(gpu_watts=power, energy_j_per_example=None if power is None else power / aggregate),
    )
    return out, tagged


def _number(value: float | None) -> float:
    """A figure an ok row must hold."""
    if value is None:
        raise TypeError("an ok row lacks a figure it must hold")
    return value


def _turn_rate(turns: Sequence[Turn], key: str) -> float | None:
    """Median examples/s of the turns of ``key`` (None when it has none)."""
    rates = [t.examples / t.seconds for t in turns if t.member == key and t.seconds > 0 and t.examples > 0]
    return metrics.median(rates) if rates else None


def flops_note(tenant: int | None, ours: object) -> str:
    """Whether a co-tenant's FLOP count equals the TensorFlow side's."""
    if tenant is None or not isinstance(ours, int):
        return "not compared: a count is missing"
    if tenant == ours:
        return f"equal to the TensorFlow side's count ({ours:,} FLOPs per example)"
    return f"differs from the TensorFlow side's {ours:,} FLOPs per example by {tenant / ours - 1:+.2%}"


def with_shared(row: CellRow, turns: Sequence[Turn], key: str, tenant: str, facts: TenantFacts) -> CellRow:
    """One process (instance) of a cell with a co-tenant from another framework: its figures from
    the instance's turns (undisturbed blocks where any are left): the TensorFlow side alone and
    together (``examples_per_sec``), the co-tenant alone and together, their kept shares summed,
    and what the co-tenant reported. ``key``: the member's turn key; ``tenant``: the co-tenant's."""
    kept = turns_clean(turns) or list(turns)
    ours, ours_shared = _turn_rate(kept, key), _turn_rate(kept, together_key(key))
    theirs, theirs_shared = _turn_rate(kept, tenant), _turn_rate(kept, together_key(tenant))
    reported = replace(
        row.foreign,
        tenant_framework_version=f"{facts.get('framework', '')} {facts.get('version', '')}".strip() or None,
        tenant_device=facts.get("device"),
        tenant_flops_per_example=facts.get("flops_per_example"),
        tenant_flops_note=facts.get("flops_note")
        or flops_note(facts.get("flops_per_example"), row.flops.flops_per_example),
    )
    if (
        ours is None
        or ours_shared is None
        or theirs is None
        or theirs_shared is None
        or row.status != Status.OK
    ):
        return replace(row, foreign=reported)
    return replace(
        row,
        examples_per_sec=Estimate(ours_shared),
        updates=replace(row.updates, optimizer_updates_per_sec=ours_shared / row.cell.effective_batch),
        foreign=replace(
            reported,
            alone_examples_per_sec=Estimate(ours),
            tenant_alone_examples_per_sec=Estimate(theirs),
            tenant_together_examples_per_sec=Estimate(theirs_shared),
            interference_ratio=Estimate(ours_shared / ours + theirs_shared / theirs),
        ),
    )


def shared_windows(
    windows: Sequence[WindowRow], turns: Sequence[Turn], key: str, tenant: str, framework: str, batch: int
) -> list[WindowRow]:
    """One process (instance) of a cell with a co-tenant from another framework: the TensorFlow
    worker's windows tagged alone or shared (its window turns, in the order it timed them; left
    untagged where the counts differ), then the co-tenant's turns as windows of worker 1."""
    ours = [t.member == together_key(key) for t in turns if t.member in (key, together_key(key))]
    tagged = (
        [
            WindowRow(**{**w, "framework": "tensorflow", "shared": shared})
            for w, shared in zip(windows, ours, strict=True)
        ]
        if len(ours) == len(windows)
        else list(windows)
    )
    cell = windows[0].get("cell_id") if windows else None
    theirs = [t for t in turns if t.member in (tenant, together_key(tenant))]
    tagged += [
        WindowRow(
            cell_id=str(cell),
            worker=1,
            repeat=i,
            window_steps=int(t.examples) // batch,
            examples=int(t.examples),
            window_s=t.seconds,
            start_s=None,
            examples_per_sec=t.examples / t.seconds if t.seconds > 0 else None,
            framework=framework,
            shared=t.member == together_key(tenant),
        )
        for i, t in enumerate(theirs)
    ]
    return tagged


SHARED: tuple[Callable[[Foreign], Estimate], ...] = (
    lambda f: f.alone_examples_per_sec,
    lambda f: f.tenant_alone_examples_per_sec,
    lambda f: f.tenant_together_examples_per_sec,
    lambda f: f.interference_ratio,
)
"""A cell with a co-tenant from another framework: the per-process figures (from its instance's
turns) that its row gives as the median over processes with a CI, as examples_per_sec."""


def _over_processes(results: Sequence[ProcessResult], figure: Callable[[Foreign], Estimate]) -> Estimate:
    """One of :data:`SHARED` over a cell's processes: median with a 95% CI (empty unless every
    process has it)."""
    values = [v for r in results if (v := figure(r.row.foreign).value) is not None]
    if len(values) != len(results) or not values:
        return Estimate()
    est = stats.figure(values)
    return Estimate.of(est.value, est.low, est.high)


def shared_figures(foreign: Foreign, results: Sequence[ProcessResult]) -> Foreign:
    """``foreign`` with :data:`SHARED`'s figures over a cell's processes (unchanged for a cell
    without a co-tenant from another framework)."""
    alone, tenant_alone, together, interference = (_over_processes(results, f) for f in SHARED)
    if not any(e.value is not None for e in (alone, tenant_alone, together, interference)):
        return foreign
    return replace(
        foreign,
        alone_examples_per_sec=alone,
        tenant_alone_examples_per_sec=tenant_alone,
        tenant_together_examples_per_sec=together,
        interference_ratio=interference,
    )


@dataclass(frozen=True)
class ProcessResult:
    """One pass of a cell: the row its processes reported (one process's figures), its window
    rows, the pass, and the parent's clock: ``wall_s`` from launch to the last exit, ``launch_s``
    from launch to the cell's start (import TensorFlow, devices, cluster)."""

    row: CellRow
    windows: list[WindowRow]
    pass_index: int
    wall_s: float = 0.0
    launch_s: float = 0.0


def _median(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return metrics.median(kept) if kept else None


def _medians(rows: Sequence[CellRow], row: CellRow) -> CellRow:
    """``row`` with each column marked ``median`` (:class:`~harness.contract.columns.Col`) the
    median over ``rows`` (a cell's processes) of theirs."""
    flat = [flatten(r) for r in rows]
    out = flatten(row)
    for leaf in leaves(CellRow):
        if leaf.col.median:
            out[leaf.name] = _median([_float_or_none(f[leaf.name]) for f in flat])
    return unflatten(CellRow, out)


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def aggregate(cell: Cell, protocol: Protocol, results: Sequence[ProcessResult]) -> CellRow:
    """The cell's row from its processes (one per pass, in pass order).

    Any invalid or failed process decides the row (with no figures): an integrity failure is the
    configuration's, and a crash is reported rather than averaged away. Otherwise the figure is
    the median of the process figures, its CI the log-scale Student-t interval over them
    (:func:`harness.formulas.stats.figure`). Either way ``jit_compile`` is what the processes that
    reported it agree on, null where they differ (:func:`agreed_jit`)."""
    rows = [r.row for r in results]

    def timed(row: CellRow) -> CellRow:
        return replace(
            _with_jit(row, rows),
            spread=replace(
                row.spread,
                processes=len(results),
                min_processes=protocol.processes,
                max_processes=protocol.max_processes,
            ),
            timing=replace(row.timing, wall_s=sum(r.wall_s for r in results)),
        )

    bad = next((r for r in results if r.row.status != Status.OK), None)
    if bad is not None:
        reason = bad.row.reason
        if len(results) > 1:
            reason = f"pass {bad.pass_index + 1} of {len(results)}: {reason}"
        return without_figures(replace(timed(bad.row), reason=reason))
    figures = [_number(r.row.examples_per_sec.value) for r in results]
    est = stats.figure(figures)
    between = stats.cv(figures)
    row = _medians(rows, timed(results[-1].row))
    row = replace(
        row,
        examples_per_sec=Estimate.of(est.value, est.low, est.high),
        spread=replace(
            row.spread,
            process_examples_per_sec=figures,
            cv_between_processes=finite(between),
            unstable=bool(math.isfinite(between) and between > protocol.unstable_cv),
        ),
        updates=replace(row.updates, optimizer_updates_per_sec=est.value / cell.effective_batch),
        foreign=shared_figures(row.foreign, results),
    )
    return replace(row, breakdown=breakdown.derived(cell, row))


def needs_another_pass(results: Sequence[ProcessResult], protocol: Protocol) -> bool:
    """Adaptive repeats: every process ok, fewer than max_processes, and the process figures
    disagree by a coefficient of variation above unstable_cv."""
    if len(results) >= protocol.max_processes or any(r.row.status != Status.OK for r in results):
        return False
    between = stats.cv([_number(r.row.examples_per_sec.value) for r in results])
    return math.isfinite(between) and between > protocol.unstable_cv


def _estimate(r: stats.Ratio) -> Estimate:
    return Estimate.of(r.value, r.low, r.high)


def process_figures(row: CellRow) -> list[float]:
    """The row's process figures (examples/s; rows that kept none: its figure alone)."""
    values = row.spread.process_examples_per_sec
    if not values:
        return [_number(row.examples_per_sec.value)]
    return [float(v) for v in values]


def with_ratios(row: CellRow, rows: Sequence[CellRow]) -> CellRow:
    """The row plus scaling_efficiency (and baseline_cell_id) against the run's rows, and for
    co-tenant cells cotenancy_ratio against the same cell alone, each with its CI (Welch's t over
    the two rows' process figures, :func:`harness.formulas.stats.ratio`)."""
    if row.status != Status.OK:
        return row
    if row.cell.tenants > 1:
        alone = find_alone(row, rows)
        if alone is not None:
            cotenancy = _estimate(stats.ratio(process_figures(row), process_figures(alone)))
            row = replace(row, tenancy=replace(row.tenancy, cotenancy_ratio=cotenancy))
    devices = row.cell.replicas * row.cell.workers
    base = row if devices == 1 else find_baseline(row, rows)
    if base is None:
        return replace(row, efficiency=replace(row.efficiency, baseline_cell_id=""))
    if base is row:
        n = len(process_figures(row))
        eff = stats.Ratio(1.0, 1.0, 1.0, n, n)
    else:
        eff = stats.ratio(process_figures(row), process_figures(base)).scaled(1 / devices)
    return replace(
        row,
        efficiency=replace(
            row.efficiency, scaling_efficiency=_estimate(eff), baseline_cell_id=base.cell.cell_id
        ),
    )


def with_history(row: CellRow, earlier: Sequence[float]) -> CellRow:
    """The row with its figure's CI widened to cover run-to-run drift when ``earlier`` (figures of
    earlier runs of the same cell on the same fingerprint, oldest first) is long enough
    (:func:`harness.formulas.stats.figure_with_history`); ``ci_history_runs`` says how many runs
    were used (0: the CI covers this run's processes only)."""
    if row.status != Status.OK:
        return row
    est, used = stats.figure_with_history(process_figures(row), earlier)
    spread = replace(row.spread, ci_history_runs=used)
    if used == 0:
        return replace(row, spread=spread)
    widened = replace(row.examples_per_sec, low=finite(est.low), high=finite(est.high))
    return replace(row, spread=spread, examples_per_sec=widened)


@dataclass(frozen=True)
class Peak:
    """The run's peak of one compute dtype on one device (all of a host's cores on CPU), FLOP/s,
    with its CI over peak processes."""

    dtype: str
    estimate: stats.Estimate


def peak_cores(row: CellRow, processes: int) -> int:
    """CPU cores the cell's processes had in all, at most the host's."""
    host = (row.machine.host_cores if row.machine else None) or 1
    return min(host, (row.ran.cores_per_worker or host) * max(processes, 1))


def with_peak(row: CellRow, peaks: Mapping[str, Peak], cell: Cell) -> CellRow:
    """The row plus the run's peak of the cell's compute dtype, scaled to what the cell ran on
    (x device_count on GPUs; x peak_cores / host_cores on CPU), and mfu against it."""
    peak = peaks.get(COMPUTE_DTYPE[cell.precision])
    if (
        peak is None
        or row.status not in (Status.OK, None)
        or row.machine is None
        or not row.machine.device_kind
    ):
        return row
    if row.machine.device_kind == "GPU":
        cores, scale = None, float(row.ran.device_count or cell.devices)
    else:
        cores = peak_cores(row, 1 if cell.tenants > 1 else cell.processes)
        scale = cores / (row.machine.host_cores or cores)
    est = peak.estimate
    value = est.value * scale
    eps = row.examples_per_sec.value
    flops = row.flops.flops_per_example or flops_per_example(cell.model)
    mfu = metrics.mfu(eps, flops, value) if row.status == Status.OK and eps and flops else row.peak.mfu
    return replace(
        row,
        peak=Utilization(
            peak_dtype=peak.dtype,
            peak_cores=cores,
            peak_flops_per_sec=Estimate(value, finite(est.low * scale), finite(est.high * scale)),
            mfu=mfu,
        ),
    )
