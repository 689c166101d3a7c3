"""A cell's row from its processes, as the launcher makes it when they end (pure, no TensorFlow):
the figure, its CI, CVs and the facts they must agree on; a co-tenant cell's from its turns; and
the row of a cell not measured."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.contract.columns import Estimate, finite, flatten, leaves, unflatten, without_figures
from harness.contract.events import Facts
from harness.contract.records import Breakdown, CellRow, Energy, Foreign, Status, Tenancy, WindowRow
from harness.contract.tenant import TenantFacts
from harness.formulas import breakdown, metrics, stats
from harness.formulas.turns import Turn
from harness.formulas.turns import clean as turns_clean
from harness.results.measurement import cell_row, machine
from harness.spec.cell import Cell
from harness.spec.frameworks import together_key
from harness.spec.protocol import Protocol


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


def aggregate(
    cell: Cell, protocol: Protocol, results: Sequence[ProcessResult], apart: Breakdown | None = None
) -> CellRow:
    """The cell's row from its processes (one per pass, in pass order). An invalid or failed process
    decides the row (no figures: an integrity failure is the configuration's, a crash is not averaged
    away); else the figure is the median of the process figures with the log-scale Student-t CI
    (:func:`harness.formulas.stats.figure`). ``jit_compile``: what the processes agree on, else null
    (:func:`agreed_jit`). ``apart``: the step breakdown measured after the turns in a process of its
    own (:mod:`harness.launch.instances.breakdowns`), which replaces the processes' own."""
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
    flat, out = [flatten(r) for r in rows], flatten(timed(results[-1].row))
    for leaf in leaves(CellRow):  # each column marked median (Col): the median over the processes
        if leaf.col.median:
            out[leaf.name] = _median([_float_or_none(f[leaf.name]) for f in flat])
    row = unflatten(CellRow, out)
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
    if apart is not None:
        row = replace(row, breakdown=apart)
    return replace(row, breakdown=breakdown.derived(cell, row))


def process_figures(row: CellRow) -> list[float]:
    """The row's process figures (examples/s; rows that kept none: its figure alone)."""
    values = row.spread.process_examples_per_sec
    if not values:
        return [_number(row.examples_per_sec.value)]
    return [float(v) for v in values]


def _number(value: float | None) -> float:
    """A figure an ok row must hold."""
    if value is None:
        raise TypeError("an ok row lacks a figure it must hold")
    return value


def _median(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return metrics.median(kept) if kept else None


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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
    """One pass of a co-tenant cell: its row and window rows from each tenant's. Only what ran at the
    same time counts: each tenant's examples over the span where every tenant was timing
    (:func:`common_span`; a window partly inside in proportion). GPU energy per example: the tenants'
    mean power (they meter the same devices) over the aggregate throughput."""
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
    return replace(
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
    ), tagged


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


SHARED = (
    "alone_examples_per_sec",
    "tenant_alone_examples_per_sec",
    "tenant_together_examples_per_sec",
    "interference_ratio",
)
"""A cell with a co-tenant from another framework: the per-process figures (from its instance's
turns, :class:`~harness.contract.records.Foreign`'s fields) that its row gives as the median over
processes with a CI, as examples_per_sec."""


def _over_processes(results: Sequence[ProcessResult], name: str) -> Estimate:
    """Figure ``name`` of :data:`SHARED` over a cell's processes: median with a 95% CI (empty unless
    every process has it)."""
    values = [v for r in results if (v := getattr(r.row.foreign, name).value) is not None]
    if len(values) != len(results) or not values:
        return Estimate()
    est = stats.figure(values)
    return Estimate.of(est.value, est.low, est.high)


def shared_figures(foreign: Foreign, results: Sequence[ProcessResult]) -> Foreign:
    """``foreign`` with :data:`SHARED`'s figures over a cell's processes (unchanged for a cell
    without a co-tenant from another framework)."""
    figures: dict[str, Any] = {name: _over_processes(results, name) for name in SHARED}  # by field
    if all(e.value is None for e in figures.values()):
        return foreign
    return replace(foreign, **figures)


def not_measured_row(
    cell: Cell, protocol: Protocol, status: Status, reason: str, facts: Facts | None
) -> CellRow:
    """A row for a cell that produced no figures (unsupported, failed)."""
    return replace(cell_row(cell, protocol), machine=machine(facts), status=status, reason=reason)
