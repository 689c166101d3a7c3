"""``compare-links``' picture: per configuration, throughput against the measured link (Gbit/s,
log scale; examples/s with the 95% CI of each setting's runs), the model's curve over the link
range where it models the configuration, and each setting's check (its prediction from the other
settings' rests, with its 95% interval). Writes PNG and SVG (:func:`harness.analysis.plots.save`)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

from harness.analysis import plots
from harness.analysis.links import Configuration, LinkComparison
from harness.contract.columns import Estimate

NAME = "compare_links"
"""The figure's file name, without its suffix."""

PANEL_INCHES = (5.0, 3.4)


def draw(c: LinkComparison, out: Path) -> list[Path]:
    """The figure ``out/compare_links.{png,svg}`` (none without configurations)."""
    if not c.configurations:
        return []
    plt = plots.pyplot()
    n = len(c.configurations)
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(PANEL_INCHES[0] * cols, PANEL_INCHES[1] * rows), squeeze=False
    )
    for ax, conf in zip(axes.flat, c.configurations, strict=False):
        _panel(ax, conf)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle("What a faster link buys: examples/s against the measured link (95% CI over runs)")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return plots.save(fig, out, NAME)


def _panel(ax: Any, conf: Configuration) -> None:
    xs = [p.setting.gbps for p in conf.points]
    ys, err = plots.ci_bars([p.estimate for p in conf.points])
    ax.errorbar(xs, ys, yerr=err, fmt="s", color="#D55E00", capsize=3, label="measured (95% CI)")
    if conf.modelled.curve:
        gx, gy = zip(*conf.modelled.curve, strict=True)
        ax.plot(gx, gy, "--", color="#0072B2", label="model")
        checked = [(p.setting.gbps * 1.06, p.model) for p in conf.points if p.model is not None]
        my, merr = plots.ci_bars([Estimate(m.value, m.low, m.high) for _, m in checked])
        ax.errorbar(
            [x for x, _ in checked],
            my,
            yerr=merr,
            fmt="o",
            mfc="none",
            color="#0072B2",
            capsize=3,
            label="model, setting left out (95% interval)",
        )
        for p in conf.points:
            if p.error is not None:
                ax.annotate(
                    f"{p.error:+.0%}",
                    (p.setting.gbps, p.side.value),
                    textcoords="offset points",
                    xytext=(6, 4),
                    fontsize=8,
                )
    else:
        ax.text(
            0.02,
            0.02,
            textwrap.fill(f"model: {conf.modelled.short}", 40),
            transform=ax.transAxes,
            fontsize=7,
        )
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))  # 1, 10, 25: not powers of ten
    ax.set_ylim(0, None)
    ax.set_xlabel("measured link, Gbit/s (log scale)")
    ax.set_ylabel("examples/s")
    ax.set_title(textwrap.fill(conf.title, 60), fontsize=8, loc="left")
    ax.legend(fontsize=7, loc="lower right")
