"""``nightly``'s words: the table it prints and the markdown summary for a CI comment, which leads
with what changed tonight. Reads the night's points (:class:`harness.contract.records.NightlyRow`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.analysis.run import render
from harness.analysis.versions.ab_text import CellPairs
from harness.analysis.versions.nightly import REVERTED, Rules
from harness.contract.columns import Estimate
from harness.contract.records import ChangePoint, NightlyRow, Status
from harness.formulas.verdicts import HIGHER, LOWER, UNDECIDED

HEADER: tuple[str, ...] = (
    "cell",
    "cand/ref",
    "95% CI",
    "pairs",
    "vs baseline",
    "95% CI",
    "verdict",
    "change point",
)


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None or not math.isfinite(value) else format(value, fmt)


def _ci(e: Estimate) -> str:
    return "-" if e.low is None or e.high is None else f"{e.low:.3f}..{e.high:.3f}"


def _change_point(cp: ChangePoint) -> str:
    if not cp.change_point:
        return "-"
    state = "new" if cp.change_point_new else "confirms rule (a)"
    return (
        f"x{_num(cp.change_point_shift)} from {cp.change_point} (p {_num(cp.change_point_p, '.4f')}, {state})"
    )


def round_line(outcomes: Sequence[CellPairs], rnd: int, spent_s: float, budget_s: float) -> str:
    """``round 3, 1.2 of 15 min: cnn/default/r1w1 0.981 (3 pairs), ...``: each cell's geometric
    mean so far."""
    parts = []
    for o in outcomes:
        short = "/".join(o.cell.id.split("/")[:3])
        if o.failure:
            parts.append(f"{short} failed")
        elif o.ratios:
            mean = math.exp(sum(math.log(r) for r in o.ratios) / len(o.ratios))
            parts.append(f"{short} {mean:.3f} ({len(o.ratios)})")
        else:
            parts.append(f"{short} - (0)")
    return f"round {rnd}, {spent_s / 60:.1f} of {budget_s / 60:g} min: " + ", ".join(parts)


def table(rows: Sequence[NightlyRow]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(header, one line per cell) for the terminal."""
    lines: list[tuple[str, ...]] = []
    for r in rows:
        if r.status != Status.OK:
            lines.append((r.cell_id, "-", "-", str(r.pairs or 0), "-", "-", "failed", str(r.reason)))
            continue
        lines.append(
            (
                r.cell_id,
                _num(r.ratio.value),
                _ci(r.ratio),
                str(r.pairs),
                _num(r.change.value),
                _ci(r.change),
                str(r.verdict) + (" (vs the reference)" if not r.baseline else ""),
                _change_point(r.change_point),
            )
        )
    return HEADER, lines


def changes(rows: Sequence[NightlyRow]) -> list[str]:
    """What changed tonight, one sentence per alarm or change point, regressions first."""
    out: list[tuple[int, str]] = []
    for r in rows:
        cell, change, cp = r.cell_id, r.change, r.change_point
        if r.status != Status.OK:
            out.append((0, f"**{cell}** has no point tonight: {r.reason}"))
            continue
        verdict = r.verdict
        if verdict in (LOWER, HIGHER):
            against = f"its baseline ({r.baseline})" if r.baseline else "the reference"
            alarm = "a regression" if verdict == LOWER else "an improvement"
            out.append(
                (
                    0 if verdict == LOWER else 2,
                    (
                        f"**{verdict}** ({alarm}) on {cell}: {_num(change.value)} x {against}, 95% CI "
                        f"{_ci(change)}; candidate/reference {_num(r.ratio.value)}"
                    ),
                )
            )
        if verdict == UNDECIDED and (change.low is None or change.low < 1 - (r.min_effect or 0)):
            out.append(
                (
                    2,
                    (
                        f"**undecided** on {cell}: {_num(change.value)} x its baseline, 95% CI "
                        f"{_ci(change)}: a regression of "
                        f"{r.min_effect or 0:.0%} can be neither claimed nor ruled out"
                    ),
                )
            )
        if verdict == REVERTED:
            out.append(
                (
                    2,
                    (
                        f"**reverted** on {cell}: back at the level before the previous night's alarm "
                        f"({_num(change.value)} x {r.baseline}): that alarm was one night's glitch"
                    ),
                )
            )
        if cp.change_point:
            shift = cp.change_point_shift
            kind = "regression" if shift is not None and shift < 1 else "improvement"
            state = "a new alarm" if cp.change_point_new else "confirming rule (a)'s alarm"
            out.append(
                (
                    1 if kind == "regression" else 3,
                    (
                        f"**change point ({kind})** on {cell}: the level moved x{_num(shift)} from night "
                        f"{cp.change_point} on (permutation p {_num(cp.change_point_p, '.4f')}; "
                        f"{state})"
                    ),
                )
            )
    return [text for _, text in sorted(out, key=lambda x: x[0])]


def markdown(
    rows: Sequence[NightlyRow], verdict: str, rules: Rules, machine: str, dashboard: str | None = None
) -> str:
    """The night as markdown for a CI comment: the verdict, what changed, the table, the builds
    (the candidate, reference and suite from the first row)."""
    header, body = table(rows)
    return render.markdown(
        "nightly.md",
        label=rows[0].label if rows else "?",
        verdict=verdict,
        changed=changes(rows),
        header=header,
        body=body,
        first=rows[0] if rows else None,
        machine=machine,
        rules=rules,
        dashboard=dashboard,
    )
