"""Why the figures are what they are: the step-time breakdown as a table, and the questions that
bring people to the suite answered from a run's own rows. Pure (rows in, text and tables out).

- :func:`breakdown_table`: per ok cell, the parts of an update in ms and their shares, the overlap
  and the verdict (:mod:`harness.formulas.breakdown`);
- :func:`devices_working`: is every device doing work?
- :func:`what_scaling_buys`: what a second replica or worker buys, and what eats the rest (the
  step's growth split into its parts);
- :func:`does_accumulation_help`: accumulation against none, with the all-reduce per example.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from harness.analysis import findings
from harness.contract.records import Status
from harness.formulas import breakdown

Row = Mapping[str, Any]

PART_NAMES = {
    "compute_s": "compute",
    "allreduce_s": "all-reduce",
    "input_s": "input",
    "dispatch_s": "dispatch",
}


def _num(row: Row, key: str) -> float | None:
    v = row.get(key)
    if v is None or (isinstance(v, float) and not math.isfinite(v)) or v is pd.NA:
        return None
    return float(v)


def _has_parts(row: Row) -> bool:
    return breakdown.parts_of(row) is not None and breakdown.reference_step(row) is not None


def _step(row: Row) -> float:
    """The step (s per update) the row's parts were timed with (:func:`breakdown.reference_step`)."""
    return breakdown.reference_step(row) or math.nan  # (callers check _has_parts)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3g}"


def breakdown_table(rows: Sequence[Row]) -> pd.DataFrame:
    """One line per ok row with its parts: milliseconds per update, share of the step they were
    timed with (parts_step_s), verdict."""
    lines = []
    for r in rows:
        if r.get("status") != Status.OK or not _has_parts(r):
            continue
        step = _step(r)
        line = {"model": r["model"], "configuration": findings.config(r), "step ms": _ms(step)}
        for key, name in PART_NAMES.items():
            line[f"{name} ms (share)"] = f"{_ms(_num(r, key))} ({float(r[key]) / step:.0%})"
        line["overlap"] = f"{float(r['overlap']):+.0%}" if _num(r, "overlap") is not None else "-"
        line["bound"] = r.get("bound") or (
            "no verdict" if breakdown.excess(step, breakdown.parts_of(r) or {}) else "-"
        )
        lines.append(line)
    return pd.DataFrame(lines)


def devices_working(rows: Sequence[Row]) -> list[str]:
    """Answers to "is every device doing work?" from the integrity checks and the breakdown."""
    multi = [r for r in rows if (r.get("replicas") or 1) * (r.get("workers") or 1) > 1]
    if not multi:
        return ["No cell of this run has more than one device."]
    ok = [r for r in multi if r.get("status") == Status.OK]
    others = len(multi) - len(ok) - sum(1 for r in multi if r.get("status") == Status.INVALID)
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
    out += [
        f"{findings.config(r)} ({r['model']}): {r.get('status')}: {r.get('reason')}"
        for r in multi
        if r.get("status") == Status.INVALID
    ]
    if any(r.get("logical_devices") for r in ok):
        out.append(
            "Here the replicas are logical CPU devices or local processes sharing one "
            "CPU: each does work, but they share its cores, so compute per update grows "
            "with their number (see the next answer)."
        )
    return out


def _baseline(row: Row, rows: Sequence[Row]) -> Row | None:
    base_id = row.get("baseline_cell_id")
    return next((r for r in rows if r.get("cell_id") == base_id and r.get("status") == Status.OK), None)


def what_scaling_buys(rows: Sequence[Row]) -> list[str]:
    """Per multi-device ok row with a 1-device baseline: its efficiency, and the growth of the
    per-update time (the step each cell's parts were timed with) split into the parts (weak
    scaling: each replica's share of an update is the baseline's whole update, so perfect scaling
    keeps the step constant)."""
    out = []
    for r in rows:
        base = _baseline(r, rows)
        if r.get("status") != Status.OK or base is None or base is r or _num(r, "scaling_efficiency") is None:
            continue
        lo, hi = _num(r, "scaling_efficiency_ci_low"), _num(r, "scaling_efficiency_ci_high")
        eff = f"{float(r['scaling_efficiency']):.2f}" + (
            f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
        )
        text = f"{r['model']} {findings.config(r)}: efficiency {eff}"
        if _has_parts(r) and _has_parts(base):
            grew = _step(r) - _step(base)
            deltas = {name: float(r[k]) - float(base[k]) for k, name in PART_NAMES.items()}
            rest = grew - sum(deltas.values())
            text += (
                f"; the update went from {_ms(_step(base))} to "
                f"{_ms(_step(r))} ms ({grew * 1e3:+.3g} ms): "
                + ", ".join(f"{n} {d * 1e3:+.3g}" for n, d in deltas.items())
                + f", unexplained {rest * 1e3:+.3g} ms"
            )
        out.append(text)
    return out or ["No multi-device cell with a 1-device baseline in this run."]


def does_accumulation_help(rows: Sequence[Row]) -> list[str]:
    """Every accumulation pair of the run: the throughput ratio with its CI and verdict, and the
    all-reduce time per example before and after."""
    out = []
    for f in findings.effects(rows, findings.Knob("accum_steps", "gradient accumulation")):
        text = f"{f.model}, {f.context}: accumulation {f.changed} against {f.reference}: {f.verdict}"
        pair = [
            r
            for r in rows
            if r.get("model") == f.model
            and r.get("status") == Status.OK
            and findings.config(r, ("model", "accum_steps")) == f.context
            and str(r.get("accum_steps")) in (f.reference, f.changed)
        ]
        per_example = {}
        for r in pair:
            if _num(r, "allreduce_s") is not None and r.get("effective_batch"):
                per_example[str(r["accum_steps"])] = float(r["allreduce_s"]) / r["effective_batch"]
        if len(per_example) == 2 and per_example[f.reference] > 0:
            text += (
                f"; all-reduce per example {per_example[f.reference] * 1e6:.3g} -> "
                f"{per_example[f.changed] * 1e6:.3g} us (one all-reduce per "
                f"{f.changed} micro-batches)"
            )
        elif len(per_example) == 2:
            text += "; no all-reduce to save (one device)"
        out.append(text)
    return out or ["No accumulation pair (accum_steps 1 and k of one configuration) in this run."]
