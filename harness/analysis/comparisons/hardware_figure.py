"""``compare-hardware``'s picture: per model, each configuration's throughput on every machine side
by side (examples/s, 95% CI with the run-to-run spread, log scale), and, with prices, each
machine's cost of a million examples at its best (USD, 95% CI). Writes PNG and SVG
(:func:`harness.analysis.run.plots.save`)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from harness.analysis.comparisons.hardware import HardwareComparison, ModelAnswer
from harness.analysis.run import plots

# Okabe-Ito, safe for the common colour-vision deficiencies
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000")
ROW_INCHES = 0.32


def draw(c: HardwareComparison, out: Path) -> list[Path]:
    """The figure ``out/hardware.{png,svg}`` (none without rows)."""
    if not c.rows:
        return []
    models = [a for a in c.models if any(r.model == a.model for r in c.rows)]
    heights = [
        max(2.0, ROW_INCHES * len({r.label for r in c.rows if r.model == a.model}) * len(c.machines))
        for a in models
    ]
    priced = bool(c.prices)
    size = (12 if priced else 8, sum(heights) + 1)
    grid = {"height_ratios": heights, **({"width_ratios": [3, 1]} if priced else {})}
    fig, axes = plots.pyplot().subplots(
        len(models), 2 if priced else 1, figsize=size, gridspec_kw=grid, squeeze=False
    )
    colour = {m.name: COLOURS[i % len(COLOURS)] for i, m in enumerate(c.machines)}
    for row_axes, a in zip(axes, models, strict=True):
        _throughput(row_axes[0], c, a, colour)
        if priced:
            _cost(row_axes[1], a, colour)
    fig.suptitle("Machines side by side: examples/s per configuration (95% CI with the run-to-run spread)")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return plots.save(fig, out, "hardware")


def _throughput(ax: Any, c: HardwareComparison, a: ModelAnswer, colour: dict[str, str]) -> None:
    rows = [r for r in c.rows if r.model == a.model]
    labels = list(dict.fromkeys(r.label for r in sorted(rows, key=lambda r: -r.figure.side.value)))
    n = len(c.machines)
    for i, m in enumerate(c.machines):
        mine = {r.label: r.figure.estimate for r in rows if r.figure.machine == m.name}
        ys = [j + (i - (n - 1) / 2) * 0.8 / n for j, lab in enumerate(labels) if lab in mine]
        xs, err = plots.ci_bars([mine[lab] for lab in labels if lab in mine])
        ax.errorbar(xs, ys, xerr=err, fmt="o", color=colour[m.name], label=m.name, capsize=2, ms=4)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel="examples/s (log scale)")
    ax.set_title(f"{a.title}", fontsize=9, loc="left")
    ax.legend(fontsize=7, loc="lower right")


def _cost(ax: Any, a: ModelAnswer, colour: dict[str, str]) -> None:
    names = [n for n in a.best if n in a.costs]
    xs, err = plots.ci_bars([a.costs[n].per_million for n in names])
    ax.barh(range(len(names)), xs, xerr=err, color=[colour[n] for n in names], capsize=3, height=0.5)
    ax.set_yticks(range(len(names)), [textwrap.fill(n, 24) for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("USD per million examples, at its best")
    ax.set_title("cost", fontsize=9, loc="left")
