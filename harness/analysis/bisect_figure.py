"""A bisect's figure: each build measured against the good build (examples/s ratio, 95% CI) by
build date, the halfway line that sorts them into slow and fast, and the two builds it ended on.
Pure apart from writing the image files (:func:`harness.analysis.plots.save`)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from harness.analysis import bisect as bs
from harness.analysis import plots
from harness.analysis.answer_figure import STYLE
from harness.analysis.bisect_text import VERDICT_WORDS
from harness.formulas.verdicts import EQUIVALENT, LOWER, UNDECIDED

COLOUR = {bs.SLOW: STYLE[LOWER], LOWER: STYLE[LOWER], bs.FAST: STYLE[EQUIVALENT]}
NAME = "ratio-by-date"


def draw(state: bs.State, done: bs.Done | None, out: Path) -> list[Path]:
    """``out/ratio-by-date.png`` and ``.svg``; nothing when no step against the good build has a
    ratio yet."""
    points = [
        m
        for m in state.measured
        if m.step.a == 0
        and m.step.kind is not bs.Kind.FINAL
        and math.isfinite(m.decision.ratio)
        and state.builds[m.step.b].date  # a release's day is unknown where the index gives none
    ]
    if not points:
        return []
    plt = plots.pyplot()
    fig, axis = plt.subplots(figsize=(9, 4.2))
    for m in points:
        d, b = m.decision, state.builds[m.step.b]
        colour, marker = COLOUR.get(d.verdict, STYLE[UNDECIDED])
        x = dt.date.fromisoformat(b.date)
        low, high = (d.low, d.high) if math.isfinite(d.low) else (d.ratio, d.ratio)
        axis.errorbar(
            [x], [d.ratio], yerr=[[d.ratio - low], [high - d.ratio]], fmt=marker, color=colour, capsize=3
        )
        axis.annotate(b.version, (x, d.ratio), textcoords="offset points", xytext=(4, 4), fontsize=7)
    axis.axhline(1.0, color="#000000", linewidth=0.8, label=f"{state.builds[0].spec} (the good build)")
    line = bs.halfway(bs.endpoints(state).decision.ratio)
    axis.axhline(line, color="#777777", linestyle="--", linewidth=0.8, label=f"halfway line {line:.3f}")
    lo, hi = (done.lo, done.hi) if done is not None else bs.bounds(state)
    for i in (i for i in (lo, hi) if state.builds[i].date):
        axis.axvline(
            dt.date.fromisoformat(state.builds[i].date), color="#777777", linestyle=":", linewidth=0.8
        )
    axis.set_xlabel("build date (the dotted lines: the two builds the slowdown lies between)")
    axis.set_ylabel(f"examples/s over {state.builds[0].version}'s")
    axis.set_title(
        "Each build measured against the good build in turns (95% CI): below the line, slow", fontsize=9
    )
    from matplotlib.lines import Line2D

    marks = [
        Line2D([], [], color=c, marker=m, linestyle="", label=VERDICT_WORDS[v])
        for v, (c, m) in (
            (bs.FAST, COLOUR[bs.FAST]),
            (bs.SLOW, COLOUR[bs.SLOW]),
            (UNDECIDED, STYLE[UNDECIDED]),
        )
    ]
    axis.legend(handles=[*axis.get_legend_handles_labels()[0], *marks], fontsize=7, loc="lower left")
    fig.autofmt_xdate()
    return plots.save(fig, out, NAME)
