"""The scaling figures (PNG and SVG, :func:`harness.analysis.run.plots.save`): ``predict``'s
(:func:`prediction_figure`), the report's scaling model (:func:`predicted_vs_measured`) and
``compare-links``' picture (:func:`draw`): per configuration, throughput against the measured link
(Gbit/s, log scale; examples/s with the 95% CI of each setting's runs), the model's curve over the
link range where it models the configuration, and each setting's check (its prediction from the
other settings' rests, with its 95% interval)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.run import plots
from harness.analysis.scale.links import Configuration, LinkComparison
from harness.contract.columns import Estimate

NAME = "compare_links"
"""The figure's file name, without its suffix."""

PANEL_INCHES = (5.0, 3.4)


def draw(c: LinkComparison, out: Path) -> list[Path]:
    """The figure ``out/compare_links.{png,svg}`` (none without configurations)."""
    if not c.configurations:
        return []
    n = len(c.configurations)
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    size = (PANEL_INCHES[0] * cols, PANEL_INCHES[1] * rows)
    fig, axes = plots.pyplot().subplots(rows, cols, figsize=size, squeeze=False)
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
        label = "model, setting left out (95% interval)"
        style = {"fmt": "o", "mfc": "none", "color": "#0072B2", "capsize": 3}
        ax.errorbar([x for x, _ in checked], my, yerr=merr, label=label, **style)
        for p in conf.points:
            if p.error is not None:
                plots.annotate(ax, f"{p.error:+.0%}", (p.setting.gbps, p.side.value))
    else:
        ax.text(
            0.02, 0.02, textwrap.fill(f"model: {conf.modelled.short}", 40), transform=ax.transAxes, fontsize=7
        )
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))  # 1, 10, 25: not powers of ten
    ax.set_ylim(0, None)
    ax.set(xlabel="measured link, Gbit/s (log scale)", ylabel="examples/s")
    ax.set_title(textwrap.fill(conf.title, 60), fontsize=8, loc="left")
    ax.legend(fontsize=7, loc="lower right")


WHISKER_CAP = 2.0
"""A figure's y axis stops at this multiple of its largest point; longer CI whiskers are cut
there (a CI over 2 processes can span two orders of magnitude) and the legend says so."""


def _devices_axis(ax: Any, devices: pd.Series) -> None:
    """Devices on a log-2 axis when they span 8x or more (1..64 stays readable), ticks at each."""
    ticks = sorted(int(d) for d in devices.unique())
    if ticks[-1] >= 8 * ticks[0]:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()


def prediction_figure(lines: pd.DataFrame, stem: Path, title: str) -> list[Path]:
    """``predict``'s figure: predicted examples/s against devices (line) with its 95% interval
    (band), measured figures with their 95% CI (points with whiskers, cut at :data:`WHISKER_CAP` x
    the largest point) and each one's prediction error."""
    fig, ax = plots.pyplot().subplots(figsize=(6.5, 4))
    ax.plot(lines["devices"], lines["predicted_examples_per_sec"], "o--", color="#1f77b4", label="predicted")
    band = [lines[k].astype(float) for k in ("devices", "predicted_low", "predicted_high")]
    ax.fill_between(*band, color="#1f77b4", alpha=0.15, label="predicted, 95% interval")
    measured = lines[lines["measured_examples_per_sec"].notna()]
    top = float(
        pd.concat([lines["predicted_examples_per_sec"], measured["measured_examples_per_sec"]])
        .astype(float)
        .max()
    )
    cut = False
    if not measured.empty:
        cut = bool((measured["measured_ci_high"].astype(float) > WHISKER_CAP * top).any())
        label = "measured (95% CI" + (", whiskers cut)" if cut else ")")
        err = plots.whiskers(measured, "measured_examples_per_sec", "measured", fill=True)
        y = measured["measured_examples_per_sec"].astype(float)
        ax.errorbar(measured["devices"], y, yerr=err, fmt="s", color="#d62728", capsize=3, label=label)
        for _, r in measured.iterrows():
            plots.annotate(ax, f"{r['error']:+.0%}", (r["devices"], r["measured_examples_per_sec"]))
    _devices_axis(ax, lines["devices"])
    ax.set_ylim(0, WHISKER_CAP * top if cut else None)
    ax.set(xlabel="devices (replicas x workers)", ylabel="examples/s")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return plots.save(fig, stem.parent, stem.name)


def predicted_vs_measured(lines: pd.DataFrame, out: Path) -> list[Path]:
    """The report's scaling-model figure, from :func:`harness.analysis.scale.scaling.report_predictions`:
    per model, examples/s against devices for each strategy[op] (and baseline config, where a
    model has several): the predicted figures of its measured multi-device cells, drawn from its
    1-device baseline (dashed line, crosses), beside their measured figures with the 95% CI
    (points with whiskers, cut at :data:`WHISKER_CAP` x the largest point), one colour per
    series. Nothing when there are no lines."""
    if lines.empty:
        return []
    lines = lines.copy()
    several = lines.groupby(["model", "series"])["config"].transform("nunique") > 1
    lines["label"] = lines["series"].where(~several, lines["series"] + " " + lines["config"])
    colors = plots.distinct_colors(sorted(lines["label"].unique()))

    def draw(ax: Any, part: pd.DataFrame) -> None:
        for label, s in part.sort_values("devices").groupby("label"):
            color, said = colors[str(label)], f"{label} predicted (from 1 device)"
            ax.plot(
                [1, *s["devices"]], [s["baseline"].iloc[0], *s["predicted"]], "x--", color=color, label=said
            )
            plots._ci_line(ax, s, "devices", f"{label} measured (95% CI)", color, fmt="o", y="measured")
        _devices_axis(ax, pd.concat([pd.Series([1]), part["devices"]]))
        top = float(max(part["predicted"].max(), part["measured"].max(), part["baseline"].max()))
        high = part["measured_ci_high"].astype(float).max()
        ceiling = min(WHISKER_CAP * top, max(1.15 * top, high))
        ax.set_ylim(0, ceiling)
        cut = "whiskers cut at the top" if high > ceiling else None
        ax.legend(fontsize=7, loc="lower left", title=cut, title_fontsize=7)

    title = "Scaling model: predicted (from the 1-device cell and the all-reduce cost) beside measured"
    return plots._facet_models(
        lines, draw, title, "examples/s", "devices (replicas x workers)", out, "predicted_vs_measured"
    )
