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

HEADER = ("cell", "cand/ref", "95% CI", "pairs", "vs baseline", "95% CI", "verdict", "change point")


def num(value: float | None, fmt: str = ".3f") -> str:
    """``value`` in ``fmt``, ``-`` where None or not finite."""
    return "-" if value is None or not math.isfinite(value) else format(value, fmt)


def _ci(e: Estimate) -> str:
    return "-" if e.low is None or e.high is None else f"{e.low:.3f}..{e.high:.3f}"


def change_point_words(cp: ChangePoint, confirms: str = ", confirms rule (a)", none: str = "-") -> str:
    """``x0.912 from n12 (p 0.0040, new)``: the level's shift, the night it starts at, its
    permutation p and whether it is new or ``confirms`` rule (a)'s alarm; ``none`` without one."""
    if not cp.change_point:
        return none
    state = ", new" if cp.change_point_new else confirms
    return f"x{num(cp.change_point_shift)} from {cp.change_point} (p {num(cp.change_point_p, '.4f')}{state})"


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
                num(r.ratio.value),
                _ci(r.ratio),
                str(r.pairs),
                num(r.change.value),
                _ci(r.change),
                str(r.verdict) + (" (vs the reference)" if not r.baseline else ""),
                change_point_words(r.change_point),
            )
        )
    return HEADER, lines


def changes(rows: Sequence[NightlyRow]) -> list[str]:
    """What changed tonight, one sentence per alarm or change point, regressions first."""
    out: list[tuple[int, str]] = []
    for r in rows:
        cell, change, cp, verdict = r.cell_id, r.change, r.change_point, r.verdict
        if r.status != Status.OK:
            out.append((0, f"**{cell}** has no point tonight: {r.reason}"))
            continue
        if verdict in (LOWER, HIGHER):
            against = f"its baseline ({r.baseline})" if r.baseline else "the reference"
            alarm = "a regression" if verdict == LOWER else "an improvement"
            said = f"**{verdict}** ({alarm}) on {cell}: {num(change.value)} x {against}, 95% CI {_ci(change)}"
            out.append((0 if verdict == LOWER else 2, f"{said}; candidate/reference {num(r.ratio.value)}"))
        if verdict == UNDECIDED and (change.low is None or change.low < 1 - (r.min_effect or 0)):
            said = f"**undecided** on {cell}: {num(change.value)} x its baseline, 95% CI {_ci(change)}"
            out.append(
                (2, f"{said}: a regression of {r.min_effect or 0:.0%} can be neither claimed nor ruled out")
            )
        if verdict == REVERTED:
            said = f"**reverted** on {cell}: back at the level before the previous night's alarm"
            out.append((2, f"{said} ({num(change.value)} x {r.baseline}): that alarm was one night's glitch"))
        if cp.change_point:
            shift = cp.change_point_shift
            kind = "regression" if shift is not None and shift < 1 else "improvement"
            state = "a new alarm" if cp.change_point_new else "confirming rule (a)'s alarm"
            said = f"**change point ({kind})** on {cell}: the level moved x{num(shift)} from night {cp.change_point}"
            p = num(cp.change_point_p, ".4f")
            out.append((1 if kind == "regression" else 3, f"{said} on (permutation p {p}; {state})"))
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
