"""The ratios a run measured in turns, as text: the table ``run`` prints and the report shows, and
the comparisons still undecided with the extra budget that would likely decide each. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.analysis.run.answer import labels
from harness.analysis.run.findings import RELATION_WORDS
from harness.analysis.run.tables import render_table
from harness.contract.records import CellRow, RatioRow
from harness.formulas.verdicts import phrase
from harness.spec.protocol import DEFAULT_MIN_EFFECT

HEADER = ("model", "comparison", "configuration", "against", "ratio", "95% CI", "instances", "verdict")

TURNS_NOTE = (
    "ratio: the configuration's throughput over the one it is against, measured in turns: both "
    "ran live at once and took turns of ~{turn_s:g} s with the whole machine while the other "
    "waited, {blocks} pairs of turns per instance (a set of fresh processes); for scaling the "
    "ratio is the efficiency (throughput / devices x the 1-device throughput). 95% CI over "
    "instances. verdict: higher or lower (the CI excludes 1 and the change is at least "
    "{min_effect:.0%}, after controlling false discoveries across the run's comparisons), "
    "equivalent (no difference of {min_effect:.0%} or more), else undecided. Turns in which another "
    "program took CPU the configuration needed are left out (python -m harness check names them)."
)


def _ci(row: RatioRow) -> str:
    low, high = row.ratio.low, row.ratio.high
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _ratio(row: RatioRow) -> str:
    value = row.ratio.value
    return "-" if value is None else f"{value:.3f}"


class Names:
    """The cells of a run as people read them: each cell id's model and configuration in words
    (:func:`harness.analysis.run.answer.labels`); an id the rows lack reads as itself."""

    def __init__(self, cells: Sequence[CellRow]) -> None:
        self.label: Mapping[str, str] = labels(cells)
        self.model: Mapping[str, str] = {c.cell.cell_id: c.cell.model for c in cells}

    def __call__(self, cell_id: str) -> str:
        return self.label.get(cell_id, cell_id)


def ratio_table(rows: Sequence[RatioRow], names: Names | None = None) -> tuple[list[str], list[list[str]]]:
    """(header, lines): one line per comparison, its verdict (for a scaling efficiency, said of
    the speed-up) or why it was not measured."""
    names = names or Names(())
    lines = [
        [
            names.model.get(r.reference, "-"),
            RELATION_WORDS[r.relation],
            names(r.subject),
            names(r.reference),
            _ratio(r),
            _ci(r),
            str(r.instances or 0),
            r.note or phrase(r.verdict or "", (r.scale or 1.0) != 1.0),
        ]
        for r in rows
    ]
    return list(HEADER), lines


def undecided_lines(rows: Sequence[RatioRow], names: Names | None = None) -> list[str]:
    """One line per undecided comparison: the instances and seconds that would likely decide it."""
    names = names or Names(())
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
            else f"about {extra} more instance{'' if extra == 1 else 's'} (~{minutes:.1f} min of budget)"
        )
        model = names.model.get(r.reference, "")
        out.append(f"  {model}{': ' if model else ''}{names(r.subject)} against {names(r.reference)}: {more}")
    return out


def ratios_text(
    rows: Sequence[RatioRow],
    turn_s: float,
    blocks: int,
    min_effect: float = DEFAULT_MIN_EFFECT,
    cells: Sequence[CellRow] = (),
) -> str:
    """The table, the note on how the ratios were obtained (``min_effect``: the F the verdicts were
    called with), and the undecided comparisons; configurations named in words from ``cells``."""
    if not rows:
        return ""
    names = Names(cells)
    note = TURNS_NOTE.format(turn_s=turn_s, blocks=blocks, min_effect=min_effect)
    parts = [render_table(*ratio_table(rows, names)), "", note]
    pending = undecided_lines(rows, names)
    if pending:
        parts += [
            "",
            f"undecided: {len(pending)} of {len(rows)} comparisons; a larger --budget-min would likely decide:",
            *pending,
        ]
    return "\n".join(parts)
