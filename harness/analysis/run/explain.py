"""Why the figures are what they are: the step-time breakdown as a table, and the questions that
bring people to the suite answered from a run's own rows. Pure (rows in, text and tables out)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from harness.analysis.run import answer, findings
from harness.contract.records import CellRow, RatioRow, Status
from harness.formulas import breakdown
from harness.spec.groups import Relation


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3g}"


def breakdown_table(rows: Sequence[CellRow]) -> pd.DataFrame:
    """One line per ok row with its parts: milliseconds per update, share of the step they were
    timed with (parts_step_s), verdict."""
    lines = []
    named = answer.labels(rows)
    for r in rows:
        m = breakdown.measured(r.breakdown)
        if r.status != Status.OK or m is None:
            continue
        b = r.breakdown
        line = {"model": r.cell.model, "configuration": named[r.cell.cell_id], "step ms": _ms(m.step_s)}
        for key, value in m.parts.items():
            line[f"{breakdown.PART_LABELS[key]} ms (share)"] = f"{_ms(value)} ({value / m.step_s:.0%})"
        line["overlap or unexplained"] = _remainder(b.overlap).strip(" ()") or "-"
        line["bound"] = b.bound or ("no verdict" if m.excess() else "-")
        lines.append(line)
    return pd.DataFrame(lines)


def devices_working(rows: Sequence[CellRow]) -> list[str]:
    """Answers to "is every device doing work?" from the integrity checks and the breakdown."""
    multi = [r for r in rows if r.cell.replicas * r.cell.workers > 1]
    if not multi:
        return ["No cell of this run has more than one device."]
    ok = [r for r in multi if r.status == Status.OK]
    invalid = [r for r in multi if r.status == Status.INVALID]
    named = answer.labels(rows)
    others = len(multi) - len(ok) - len(invalid)
    out = [
        (
            f"{len(ok)} of {len(multi)} multi-device cells were measured and passed every integrity "
            f"check{f' ({others} unsupported or failed: listed at the end)' if others else ''}: as many "
            "replicas in sync as asked, the model's variables distributed by the strategy, every "
            "replica's copy of every weight equal after training, and (parameter server) every "
            "worker ran updates. A model or optimizer built outside strategy.scope(), the usual "
            "reason only one device works, fails these checks."
        )
    ]
    out += [f"{r.cell.model}, {named[r.cell.cell_id]}: {r.status}: {r.reason}" for r in invalid]
    if any(r.ran.logical_devices for r in ok):
        out.append(
            "Here the replicas are logical CPU devices or local processes sharing one "
            "CPU: each does work, but they share its cores, so compute per update grows "
            "with their number (see the next answer)."
        )
    return out


def _baseline(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    base_id = row.efficiency.baseline_cell_id
    return next((r for r in rows if r.cell.cell_id == base_id and r.status == Status.OK), None)


def what_scaling_buys(rows: Sequence[CellRow]) -> list[str]:
    """Per multi-device ok row with a 1-device baseline: its efficiency, and the per-update time
    (the step each cell's parts were timed with) and each part, on one device and on several (weak
    scaling: each replica's share of an update is the baseline's whole update, so perfect scaling
    keeps the step constant), and the overlap or the share no part explains."""
    out = []
    named = answer.labels(rows)
    for r in rows:
        base = _baseline(r, rows)
        eff = r.efficiency.scaling_efficiency
        if r.status != Status.OK or base is None or base is r or eff.value is None:
            continue
        ci = f" [{eff.low:.2f}, {eff.high:.2f}]" if eff.low is not None and eff.high is not None else ""
        text = f"{r.cell.model}, {named[r.cell.cell_id]}: efficiency {eff.value:.2f}{ci}"
        mine, theirs = breakdown.measured(r.breakdown), breakdown.measured(base.breakdown)
        if mine is not None and theirs is not None and mine.bounds is theirs.bounds:
            text += (
                f"; the update went from {_ms(theirs.step_s)} to {_ms(mine.step_s)} ms: "
                + ", ".join(
                    f"{breakdown.PART_LABELS[k]} {_ms(theirs.parts[k])} -> {_ms(v)}"
                    for k, v in mine.parts.items()
                )
                + " ms"
                + _remainder(r.breakdown.overlap)
            )
        out.append(text)
    return out or ["No multi-device cell with a 1-device baseline in this run."]


def _remainder(overlap: float | None) -> str:
    """`` (overlap +3%)`` where the parts add up to more than the step, `` (unexplained 34%)`` where
    to less ("" when unknown)."""
    if overlap is None or not math.isfinite(overlap):
        return ""
    return f" (overlap {overlap:+.0%})" if overlap >= 0 else f" (unexplained {-overlap:.0%})"


def does_accumulation_help(rows: Sequence[CellRow], ratios: Sequence[RatioRow]) -> list[str]:
    """Every accumulation comparison measured in turns: the throughput ratio with its CI and
    verdict, and the all-reduce time per example before and after where both were broken down."""
    by_id = {r.cell.cell_id: r for r in rows}
    named = answer.labels(rows)
    out = []
    for q in ratios:
        if q.relation != Relation.ACCUMULATION or q.subject not in by_id or q.reference not in by_id:
            continue
        subject, reference = by_id[q.subject], by_id[q.reference]
        text = (
            f"{subject.cell.model}, {named[q.subject]} against {named[q.reference]}: {findings.ratio_text(q)}"
        )
        out.append(text + _allreduce_per_example(subject, reference))
    return out or ["No accumulation comparison was measured in turns in this run."]


def _allreduce_per_example(subject: CellRow, reference: CellRow) -> str:
    """``; all-reduce per example 3.1 -> 0.8 us`` where both rows have an all-reduce part."""
    per = [
        r.breakdown.allreduce_s / r.cell.effective_batch
        for r in (reference, subject)
        if r.breakdown.allreduce_s is not None
        and math.isfinite(r.breakdown.allreduce_s)
        and r.cell.effective_batch
    ]
    if len(per) < 2:
        return ""
    if per[0] <= 0:
        return "; no all-reduce to save (one device)"
    return f"; all-reduce per example {per[0] * 1e6:.3g} -> {per[1] * 1e6:.3g} us"
