"""The ratios a run measured in turns, as text: the table ``run`` prints and the report shows, and
the comparisons still undecided with the extra budget that would likely decide each. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.tables import render_table
from harness.contract.records import RatioRow
from harness.formulas.verdicts import phrase
from harness.spec.protocol import DEFAULT_MIN_EFFECT

HEADER = ("comparison", "subject", "ratio", "95% CI", "inst", "verdict")

TURNS_NOTE = (
    "ratios in turns: the cells a ratio compares ran live at once and took turns of ~{turn_s:g} s "
    "(one timed window with the whole machine while the others waited), {blocks} blocks of two "
    "turns each per instance; ratio = exp(mean over instances of the mean block log ratio) (x 1/devices "
    "for scaling: the efficiency); 95% CI: Student t over instances (fresh processes); verdicts "
    "compare throughput (for scaling: against the 1-device cell's), control the false discovery "
    "rate (Benjamini-Hochberg, 5%) across the run's comparisons: higher or lower (CI beyond 1, effect "
    "at least {min_effect:.0%}), equivalent (CI within {min_effect:.0%} of 1), else undecided; blocks in which another program or the hypervisor "
    "took CPU a member needed during a turn are left out (harness check names them)."
)


def _ci(row: RatioRow) -> str:
    low, high = row.ratio.low, row.ratio.high
    if low is None or high is None:
        return "-"
    return f"[{low:.3f}, {high:.3f}]"


def _ratio(row: RatioRow) -> str:
    value = row.ratio.value
    return "-" if value is None else f"{value:.3f}"


def ratio_table(rows: Sequence[RatioRow]) -> tuple[list[str], list[list[str]]]:
    """(header, lines): one line per comparison, its verdict (for a scaling efficiency, said of
    the speed-up) or why it was not measured."""
    lines = []
    for r in rows:
        scaled = (r.scale or 1.0) != 1.0
        verdict = r.note or phrase(r.verdict or "", scaled)
        lines.append(
            [f"{r.relation} vs {r.reference}", r.subject, _ratio(r), _ci(r), str(r.instances or 0), verdict]
        )
    return list(HEADER), lines


def undecided_lines(rows: Sequence[RatioRow]) -> list[str]:
    """One line per undecided comparison: the instances and seconds that would likely decide it."""
    out = []
    for r in rows:
        if r.decided or r.note:
            continue
        extra, seconds = r.extra_instances, r.extra_s
        minutes = seconds / 60 if seconds is not None else float("nan")
        more = (
            "the spread is unknown (fewer than 2 instances)"
            if extra is None
            else "a difference on its own, held back by the false-discovery control over the run's "
            "comparisons: more instances narrow its CI"
            if extra == 0
            else f"about {extra} more instances (~{minutes:.1f} min of budget)"
        )
        out.append(f"  {r.relation}: {r.subject} vs {r.reference}: {more}")
    return out


def ratios_text(
    rows: Sequence[RatioRow], turn_s: float, blocks: int, min_effect: float = DEFAULT_MIN_EFFECT
) -> str:
    """The table, the note on how the ratios were obtained (``min_effect``: the F the verdicts were
    called with), and the undecided comparisons."""
    if not rows:
        return ""
    note = TURNS_NOTE.format(turn_s=turn_s, blocks=blocks, min_effect=min_effect)
    parts = [render_table(*ratio_table(rows)), "", note]
    pending = undecided_lines(rows)
    if pending:
        parts += [
            "",
            f"undecided: {len(pending)} of {len(rows)} comparisons; a larger --budget-min would likely decide:",
        ]
        parts += pending
    return "\n".join(parts)
