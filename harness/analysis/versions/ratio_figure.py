"""Ratios of builds compared: ``ab``'s pairs (:func:`ab_pairs`), and one ratio over time: each
point a ratio with its 95% CI against a date, levels (1.0, a halfway line) as horizontal lines,
moments (a change point, the builds a bisect ended on) as vertical ones. ``nightly``'s dashboard
draws a series of nights (:func:`nightly`, embedded as PNG), ``bisect`` each build against the
good one by build date (:func:`bisect`, written as PNG and SVG)."""

from __future__ import annotations

import base64
import datetime as dt
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.run import plots
from harness.analysis.run.answer_figure import STYLE
from harness.analysis.versions import ab
from harness.analysis.versions import bisect as bs
from harness.analysis.versions.bisect_text import VERDICT_WORDS
from harness.contract.records import Status
from harness.formulas.verdicts import EQUIVALENT, LOWER, UNDECIDED


@dataclass(frozen=True)
class Point:
    """A ratio with its CI (NaN: none) at ``when``; ``kind``: its legend's words; ``style``:
    (colour, marker); ``note``: the words beside it (a night's label, a build's version)."""

    when: dt.date
    ratio: float
    low: float
    high: float
    kind: str
    style: tuple[str, str]
    note: str


@dataclass(frozen=True)
class Mark:
    """A level (a ratio: horizontal) or a moment (a date: vertical), ``label`` in the legend."""

    at: Any
    colour: str = "#777777"
    style: str = "-"
    label: str | None = None


@dataclass(frozen=True)
class Chart:
    points: tuple[Point, ...]
    levels: tuple[Mark, ...]
    moments: tuple[Mark, ...]
    xlabel: str
    ylabel: str
    title: str


def _figure(chart: Chart) -> Any:
    from matplotlib.lines import Line2D

    fig, axis = plots.pyplot().subplots(figsize=(9, 4.2))
    for p in chart.points:
        err = [[p.ratio - p.low], [p.high - p.ratio]] if math.isfinite(p.low) else None
        axis.errorbar([p.when], [p.ratio], yerr=err, fmt=p.style[1], color=p.style[0], capsize=3)
        plots.annotate(axis, p.note, (p.when, p.ratio), fontsize=7, offset=4)
    for h in chart.levels:
        axis.axhline(h.at, color=h.colour, linestyle=h.style, linewidth=0.8, label=h.label)
    for v in chart.moments:
        axis.axvline(v.at, color=v.colour, linestyle=v.style, linewidth=0.8, label=v.label)
    axis.set(xlabel=chart.xlabel, ylabel=chart.ylabel)
    axis.set_title(chart.title, fontsize=9)
    kinds = {
        p.kind: Line2D([], [], color=p.style[0], marker=p.style[1], ls="", label=p.kind) for p in chart.points
    }
    axis.legend(handles=[*axis.get_legend_handles_labels()[0], *kinds.values()], fontsize=7, loc="lower left")
    fig.autofmt_xdate()
    return fig


def draw(chart: Chart, out: Path, name: str) -> list[Path]:
    """``out/name.png`` and ``.svg`` (:func:`harness.analysis.run.plots.save`); nothing without points."""
    return plots.save(_figure(chart), out, name) if chart.points else []


def png_base64(chart: Chart) -> str | None:
    """The chart as a base64 PNG to embed in a page; None without points."""
    if not chart.points:
        return None
    fig, buf = _figure(chart), io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=110)
    plots.pyplot().close(fig)
    return base64.b64encode(buf.getvalue()).decode()


BISECT = "ratio-by-date"
"""The stem of a bisect's figure."""
BISECT_STYLE = {bs.SLOW: STYLE[LOWER], bs.FAST: STYLE[EQUIVALENT], UNDECIDED: STYLE[UNDECIDED]}


def bisect(state: bs.State, done: bs.Done | None) -> Chart:
    """Each build measured against the good build by build date (a build without one is left
    out), the halfway line that sorts them into slow and fast, and the two builds it ended on."""
    points = []
    for m in state.measured:
        d, b = m.decision, state.builds[m.step.b]
        if m.step.a == 0 and m.step.kind is not bs.Kind.FINAL and math.isfinite(d.ratio) and b.date:
            kind = {LOWER: bs.SLOW, bs.SLOW: bs.SLOW, bs.FAST: bs.FAST}.get(d.verdict, UNDECIDED)
            at = dt.date.fromisoformat(b.date)
            points.append(
                Point(at, d.ratio, d.low, d.high, VERDICT_WORDS[kind], BISECT_STYLE[kind], b.version)
            )
    line = bs.halfway(bs.endpoints(state).decision.ratio) if points else 1.0
    ends = (done.lo, done.hi) if done is not None else bs.bounds(state) if points else ()
    good = state.builds[0]
    return Chart(
        tuple(points),
        (
            Mark(1.0, "#000000", "-", f"{good.spec} (the good build)"),
            Mark(line, style="--", label=f"halfway line {line:.3f}"),
        ),
        tuple(
            Mark(dt.date.fromisoformat(state.builds[i].date), style=":") for i in ends if state.builds[i].date
        ),
        "build date (the dotted lines: the two builds the slowdown lies between)",
        f"examples/s over {good.version}'s",
        "Each build measured against the good build in turns (95% CI): below the line, slow",
    )


ALARM_COLOUR = {"regression": "#c62828", "improvement": "#2e7d32"}
"""A night's colour by its alarm (else blue)."""


def alarm_of(alarm: object) -> str | None:
    """The night's alarm that has a colour (``regression`` or ``improvement``), or None."""
    return next((a for a in alarm.split(",") if a in ALARM_COLOUR), None) if isinstance(alarm, str) else None


def nightly(nights: pd.DataFrame) -> Chart:
    """One series: each measured night's candidate/reference ratio with its CI by time, alarm
    nights coloured, a change point as a dashed line halfway before the night it starts at."""
    ok = nights[nights["status"] == Status.OK].sort_values("timestamp")
    when = [dt.datetime.fromisoformat(str(t)) for t in ok["timestamp"]]
    points, labels = [], [str(x) for x in ok["label"]]
    ratios = ok[["ratio", "ratio_ci_low", "ratio_ci_high"]].astype(float).itertuples(index=False)
    for at, (ratio, low, high), night, a in zip(when, ratios, labels, ok["alarm"], strict=True):
        alarm = alarm_of(a)
        kind, colour = (f"{alarm} alarm", ALARM_COLOUR[alarm]) if alarm else ("no alarm", "#1565c0")
        points.append(Point(at, ratio, low, high, kind, (colour, "o"), night))
    cps = [labels.index(at) for at in dict.fromkeys(ok["change_point"].dropna().astype(str)) if at in labels]
    before = [(when[i] - (when[i] - when[i - 1]) / 2 if i else when[i], labels[i]) for i in cps]
    return Chart(
        tuple(points),
        (Mark(1.0, "#000000", "-", "the reference build"),),
        tuple(Mark(at, "#6a1b9a", "--", f"change point before {night}") for at, night in before),
        "night (UTC)",
        "candidate/reference examples/s",
        "Each night's candidate against the reference in turns (95% CI over pairs)",
    )


def ab_pairs(rows: pd.DataFrame, out: Path) -> list[Path]:
    """``ab`` rows: each pair's B/A throughput ratio per cell, in pair order, against 1."""
    if rows.empty or "ab_side" not in rows:
        return []
    ratios = ab.pair_ratios(rows)
    if ratios.empty:
        return []
    fig, ax = plots.pyplot().subplots(figsize=(7, 4))
    colors = plots.distinct_colors(sorted(ratios["cell_id"].unique()))
    for cell_id, part in ratios.groupby("cell_id"):
        ax.plot(part["ab_pair"], part["ratio"], "o-", color=colors[str(cell_id)], label=cell_id)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set(xlabel="pair", ylabel="B / A examples/s")
    ax.set_title("ab: each pair's throughput ratio (below 1: B slower)", fontsize=9)
    ax.legend(fontsize=6)
    return plots.save(fig, out, "ab_pairs")
