"""The picture at the top of the report: per model, each configuration's training throughput
(examples/s) relative to the model's leader (the fastest, measured in turns), with its 95% CI, the
band of equivalence (ratios within ±min-effect of 1) shaded and each point in its verdict's colour.

Pure apart from writing the image files (PNG and SVG side by side, as :mod:`harness.analysis.run.plots`
writes them); the caller turns its comparisons into :class:`Panel` objects."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis.run import plots
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, NOT_MEASURED, UNDECIDED

LEADER = "leader"

# Okabe-Ito, safe for every common colour-vision deficiency; the marker tells the verdict apart too
STYLE: dict[str, tuple[str, str]] = {
    LEADER: ("#000000", "D"),
    LOWER: ("#D55E00", "<"),
    EQUIVALENT: ("#0072B2", "o"),
    UNDECIDED: ("#E69F00", "s"),
    HIGHER: ("#009E73", ">"),
}
LEGEND = {
    LEADER: "leader (fastest measured; the answer says whether decided)",
    LOWER: "lower: slower than the leader",
    EQUIVALENT: "equivalent: CI inside the band",
    UNDECIDED: "undecided: more turns needed",
    HIGHER: "higher: faster than the leader",
}
TITLE = "Training throughput against each model's leader (median of timed windows, 95% CI; measured in turns)"
ROW_INCHES = 0.34
"""Height of one configuration's row; a panel's height scales with its bar count."""


@dataclass(frozen=True)
class Bar:
    """One configuration of a model against the model's leader."""

    label: str
    """In words, unique within the model, e.g. ``MirroredStrategy on 2 replicas``."""
    ratio: float | None
    """Configuration / leader throughput (examples/s over examples/s, no unit); 1.0 for the leader
    itself; None: not measured."""
    low: float | None
    """Lower end of the ratio's 95% CI (None: no CI)."""
    high: float | None
    """Upper end of the ratio's 95% CI (None: no CI)."""
    verdict: str
    """``leader``, or the configuration against the leader: ``lower``, ``higher``, ``equivalent``,
    ``undecided``, ``not measured``."""

    @property
    def measured(self) -> bool:
        """Whether there is a ratio to draw (finite and positive: the x axis is logarithmic)."""
        return self.ratio is not None and math.isfinite(self.ratio) and self.ratio > 0


@dataclass(frozen=True)
class Panel:
    """One model: its title (e.g. ``CNN (MNIST convnet)``) and its configurations."""

    title: str
    bars: tuple[Bar, ...]


def ordered(bars: Sequence[Bar]) -> list[Bar]:
    """The leader first, then the measured bars by ratio descending, the not-measured last."""
    measured = [b for b in bars if b.measured]
    leaders = [b for b in measured if b.verdict == LEADER]
    rest = sorted((b for b in measured if b.verdict != LEADER), key=lambda b: -(b.ratio or 0.0))
    return leaders + rest + [b for b in bars if not b.measured]


def percent(ratio: float, digits: int = 1) -> str:
    """A ratio as its change from the leader in percent, with a minus sign (U+2212) below 1:
    0.9 -> ``-10.0%`` (``-10%`` with ``digits=0``), 1.08 -> ``+8.0%``, 1.0 -> ``0``."""
    change = round((ratio - 1) * 100, digits)
    if change == 0:
        return "0"
    return f"{change:+.{digits}f}%".replace("-", "\u2212")


STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""Tick spacing in ratio units (1%, 2%, ... 1000% of the leader's throughput)."""


def _steps(lo: float, hi: float, step: float) -> list[float]:
    """The ratios 1 + k * step (k an integer) in [lo, hi], all positive."""
    first, last = math.ceil((lo - 1) / step), math.floor((hi - 1) / step)
    return [1 + k * step for k in range(first, last + 1) if 1 + k * step > 0]


def ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Ratios in [lo, hi] at the finest round percentage step giving at most ``most`` of them
    (always 1.0), none closer to another on the log axis than a seventh of its width."""
    candidates = next(
        (c for c in (_steps(lo, hi, step) for step in STEPS) if len(c) <= most), _steps(lo, hi, STEPS[-1])
    )
    gap = (math.log(hi) - math.log(lo)) / 7
    kept = [1.0]
    for t in sorted(candidates, key=lambda t: abs(math.log(t))):
        if all(abs(math.log(t) - math.log(k)) >= gap for k in kept):
            kept.append(t)
    return sorted(kept)


def _whiskers(b: Bar) -> list[list[float]] | None:
    """The 95% CI as errorbar's ``xerr`` (distances below and above the ratio); None without both
    ends."""
    if b.ratio is None or b.low is None or b.high is None:
        return None
    return [[max(b.ratio - b.low, 0.0)], [max(b.high - b.ratio, 0.0)]]


def _point(ax: Any, y: int, b: Bar) -> None:
    """One measured bar: its ratio (a marker in its verdict's colour), the 95% CI as horizontal
    whiskers where it has one, and (but for the leader) the change in percent written to the right."""
    color, marker = STYLE.get(b.verdict, ("#808080", "o"))
    ratio = float(b.ratio or 1.0)
    err = _whiskers(b)
    ax.errorbar([ratio], [y], xerr=err, fmt=marker, color=color, markersize=7, capsize=3, elinewidth=1.6)
    if b.verdict == LEADER:
        return
    box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5}
    at = (ratio + err[1][0] if err else ratio, y)
    ax.annotate(
        percent(ratio), at, xytext=(5, 0), textcoords="offset points", va="center", fontsize=8, bbox=box
    )


def _panel(ax: Any, panel: Panel, min_effect: float) -> None:
    """One model: the band, the leader's line at 1.0, one row per bar (the leader at the top, its
    label in bold)."""
    bars = ordered(panel.bars)
    values = [1 / (1 + min_effect), 1 + min_effect]  # the x range holds every point, CI end and the band
    for b in bars:
        values += [v for v in (b.ratio, b.low, b.high) if v is not None and math.isfinite(v) and v > 0]
    lo, hi = math.log(min(values)), math.log(max(values))
    width = hi - lo  # padded on a log scale; the right side has room for the value beside each point
    lo, hi = math.exp(lo - 0.06 * width), math.exp(hi + 0.22 * width)
    ax.axvspan(1 / (1 + min_effect), 1 + min_effect, color="#0072B2", alpha=0.12, lw=0)
    ax.axvline(1.0, color="#000000", lw=1, ls="--")
    for y, b in enumerate(bars):
        if b.measured:
            _point(ax, y, b)
        else:  # the words in place of a point, at the left of the panel (x in axes fractions, y in rows)
            grey = {"fontsize": 8, "color": "#606060", "style": "italic"}
            ax.text(0.01, y, NOT_MEASURED, transform=ax.get_yaxis_transform(), va="center", **grey)
    ax.set(xscale="log", xlim=(lo, hi))
    marks = ticks(lo, hi)
    ax.set_xticks(marks, [percent(t, digits=0) for t in marks])
    ax.minorticks_off()
    ax.set_yticks(range(len(bars)), [b.label for b in bars], fontsize=9)
    for tick, b in zip(ax.get_yticklabels(), bars, strict=True):
        tick.set_fontweight("bold" if b.verdict == LEADER else "normal")
    ax.set_ylim(len(bars) - 0.4, -0.6)
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    ax.set_title(panel.title, fontsize=10, loc="left")
    ax.set_xlabel("throughput relative to the leader (examples/s, log scale)", fontsize=8)


def _legend(fig: Any, panels: Sequence[Panel], min_effect: float) -> None:
    """Above the panels: what the figure shows (as the legend's title), the verdicts present in the
    figure in a fixed order, and the band."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    present = {b.verdict for p in panels for b in p.bars if b.measured}
    handles: list[Any] = [
        Line2D([], [], color=STYLE[v][0], marker=STYLE[v][1], ls="", markersize=7, label=LEGEND[v])
        for v in STYLE
        if v in present
    ]
    handles.append(Patch(color="#0072B2", alpha=0.12, label=f"equivalent (±{round(min_effect * 100, 2):g}%)"))
    bold = {"size": 10, "weight": "bold"}
    where = {"loc": "outside upper center", "ncol": 3, "frameon": False}
    fig.legend(handles=handles, fontsize=8, title=TITLE, title_fontproperties=bold, **where)


def draw(panels: Sequence[Panel], min_effect: float, out: Path, stem: str = "answer") -> list[Path]:
    """Writes ``out/stem.png`` and ``out/stem.svg`` (creating ``out``) and returns their paths: one
    panel per model with a measured bar, stacked, each configuration's throughput (examples/s)
    relative to the model's leader with its 95% CI, the band [1/(1+min_effect), 1+min_effect]
    (``min_effect`` a fraction, 0.05 for 5%) shaded. ``[]`` when no panel has a measured bar."""
    shown = [p for p in panels if any(b.measured for b in p.bars)]
    if not shown:
        return []
    plt = plots.pyplot()
    rows = [len(p.bars) + 1.6 for p in shown]
    size = (9.5, ROW_INCHES * sum(rows) + 1.0)
    fig, axes = plt.subplots(
        len(shown), 1, figsize=size, height_ratios=rows, squeeze=False, layout="constrained"
    )
    for ax, panel in zip(axes[:, 0], shown, strict=True):
        _panel(ax, panel, min_effect)
    _legend(fig, shown, min_effect)
    return plots.save(fig, out, stem)
