"""seaborn figures from result rows. Each function takes a DataFrame of cell rows (the documented
schema) and writes PNG and SVG files, returning their paths; none reads or writes anything else.

Every figure says what its numbers are: throughput is the cell's figure (the median over its
processes) with its 95% CI; CPU runs with logical devices are labelled as such."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal, cast

import pandas as pd

from harness.analysis.run import answer
from harness.contract.columns import Estimate
from harness.contract.records import Status
from harness.spec import words
from harness.spec.axes import AXES, AXIS_BY_NAME, DEVICE_AXES, OPTION_AXES

FORMATS = ("png", "svg")


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def labels(rows: pd.DataFrame, unsaid: Sequence[str] = ()) -> pd.Series:
    """Each row's configuration in words (:func:`harness.spec.words.labels`, from its axes as
    :func:`harness.analysis.run.answer.values` reads them), unique among its model's rows but for the
    axes ``unsaid`` (what a figure's x axis or panel already says)."""
    columns = [a.row_column for a in AXES if a.row_column in rows]
    configs = [
        {k: v for k, v in answer.values(cast(Any, SimpleNamespace(**r))).items() if k not in unsaid}
        for r in cast(list[dict[str, Any]], rows[columns].to_dict("records"))
    ]
    out, models = [""] * len(rows), rows["model"].tolist()
    for model in dict.fromkeys(models):
        mine = [i for i, m in enumerate(models) if m == model]
        for i, label in zip(mine, words.labels([configs[i] for i in mine]), strict=True):
            out[i] = label
    return pd.Series(out, index=rows.index, dtype=object)


def ci_bars(est: Sequence[Estimate]) -> tuple[list[float], list[list[float]]]:
    """Each figure (0 where none) and its 95% CI as errorbar's ``xerr``/``yerr``: the distances
    below and above it (0 where the CI's end is unknown)."""
    xs = [e.value or 0.0 for e in est]
    below = [x - (e.low or x) for x, e in zip(xs, est, strict=True)]
    return xs, [below, [(e.high or x) - x for x, e in zip(xs, est, strict=True)]]


def save(fig: Any, out: Path, name: str) -> list[Path]:
    """``out/name.png`` and ``out/name.svg`` (creating ``out``); closes the figure."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{ext}" for ext in FORMATS]
    for path in paths:
        fig.savefig(path, bbox_inches="tight", dpi=110)
    pyplot().close(fig)
    return paths


def _ok(rows: pd.DataFrame, tenants: bool = False) -> pd.DataFrame:
    """The measured rows; co-tenant rows (tenants > 1) only with ``tenants``."""
    ok = rows[(rows["status"] == Status.OK) & rows["examples_per_sec"].notna()].copy()
    if not tenants and "tenants" in ok:
        ok = ok[ok["tenants"].fillna(1) <= 1]
    ok["total_replicas"] = ok["replicas"] * ok["workers"]
    return ok


def whiskers(s: pd.DataFrame, y: str, ci: str = "", fill: bool = False) -> list[pd.Series]:
    """Column ``y``'s 95% CI (columns ``ci``_ci_low and _ci_high, ``ci`` defaulting to ``y``) as
    errorbar's ``yerr``: the distances below and above ``y``; an unknown end draws no whisker, or
    with ``fill`` a whisker of length 0."""
    v = s[y].astype(float)
    low, high = (s[f"{ci or y}_ci_{end}"].astype(float) for end in ("low", "high"))
    return [v - low.fillna(v), high.fillna(v) - v] if fill else [v - low, high - v]


def _ci_line(
    ax: Any,
    s: pd.DataFrame,
    x: str,
    label: str,
    color: Any,
    fmt: str = "o-",
    y: str = "examples_per_sec",
    fill: bool = False,
) -> None:
    """Figure ``y`` (median examples/s) of the rows ``s`` against column ``x``, its 95% CI
    (:func:`whiskers`) as whiskers."""
    err = whiskers(s, y, fill=fill)
    ax.errorbar(s[x], s[y].astype(float), yerr=err, fmt=fmt, capsize=3, label=label, color=color)


def annotate(ax: Any, text: str, xy: tuple[Any, Any], fontsize: float = 8, offset: float = 6) -> None:
    """``text`` beside the point ``xy``, ``offset`` points to its right and 4 above."""
    ax.annotate(text, xy, textcoords="offset points", xytext=(offset, 4), fontsize=fontsize)


def _xla(rows: pd.DataFrame) -> pd.Series:
    """The rows' ``xla`` (``off`` where a row predates it)."""
    return rows["xla"].fillna("off") if "xla" in rows else pd.Series("off", index=rows.index)


def distinct_colors(names: Sequence[str]) -> dict[str, Any]:
    """One colour per name, none repeated: tab10 up to 10 names, tab20 up to 20, else husl."""
    import seaborn as sns

    n = len(names)
    palette = "tab10" if n <= 10 else "tab20" if n <= 20 else "husl"
    return dict(zip(names, sns.color_palette(palette, n), strict=True))


def _device_note(rows: pd.DataFrame) -> str:
    if rows.get("logical_devices") is not None and rows["logical_devices"].fillna(False).any():
        return " (CPU: replicas are logical devices sharing one CPU)"
    return ""


def _facet_models(
    rows: pd.DataFrame,
    draw: Callable[[Any, pd.DataFrame], None],
    title: str,
    ylabel: str,
    xlabel: str,
    out: Path,
    name: str,
    width: float = 6.0,
) -> list[Path]:
    """``out/name``: one panel per model, each drawn by ``draw``, under ``title`` (and what the
    devices were, :func:`_device_note`)."""
    models = sorted(rows["model"].unique())
    fig, axes = pyplot().subplots(1, len(models), figsize=(width * len(models), 4.4), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        draw(ax, rows[rows["model"] == model])
        ax.set(title=model, xlabel=xlabel, ylabel=ylabel)
    fig.suptitle(title + _device_note(rows))
    fig.tight_layout()
    return save(fig, out, name)


def _lines(
    ok: pd.DataFrame, x: str, unsaid: Sequence[str], how: Literal["nunique", "max"] = "nunique"
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows ``ok`` with column ``series`` (their configuration in words but for ``unsaid``),
    only the series whose ``how`` (``nunique`` or ``max``) of column ``x`` is over 1 within their
    model, and each series' colour (:func:`distinct_colors`)."""
    ok = ok.assign(series=labels(ok, unsaid))
    ok = ok[ok.groupby(["model", "series"])[x].transform(how) > 1]
    return ok, distinct_colors(sorted(ok["series"].unique()))


def _from_zero(ax: Any, ticks: pd.Series | None = None) -> None:
    """The y axis from 0, x ticks at each of ``ticks``' values (if given), the legend outside."""
    if ticks is not None:
        ax.set_xticks(sorted(ticks.unique()))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def throughput_vs_batch(rows: pd.DataFrame, out: Path) -> list[Path]:
    """Median examples/s against the global batch, one line per strategy/topology measured at
    several batches: 95% CI as whiskers and a band. Only cells without accumulation, in the ctl
    loop, float32 (the comparable core); single-batch series are left to the summary table, so a
    panel holds few lines, each its own colour."""
    ok = _ok(rows)
    ok = ok[
        (ok["accum_steps"] == 1)
        & (ok["loop"] == "ctl")
        & (ok["precision"] == "float32")
        & (_xla(ok) == "off")
    ]
    ok, colors = _lines(ok, "global_batch", ["batch"])
    if ok.empty:
        return []

    def draw(ax: Any, part: pd.DataFrame) -> None:
        for series, s in part.sort_values("global_batch").groupby("series"):
            _ci_line(ax, s, "global_batch", str(series), colors[str(series)])
            band = (s[f"examples_per_sec_ci_{end}"].astype(float) for end in ("low", "high"))
            ax.fill_between(s["global_batch"], *band, alpha=0.15, color=colors[str(series)])
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(part["global_batch"].unique()), sorted(part["global_batch"].unique()))
        _from_zero(ax)

    title = "Throughput vs global batch (median of timed windows, 95% CI)"
    return _facet_models(
        ok, draw, title, "examples/s", "global batch (examples)", out, "throughput_vs_batch", 7.5
    )


def scaling_efficiency(rows: pd.DataFrame, out: Path) -> list[Path]:
    """Scaling efficiency against total replicas (replicas x workers), 95% CI whiskers (over group
    instances when measured in turns), the ideal at 1.0; one line per strategy (and batch)."""
    ok = _ok(rows)
    ok = ok[ok["scaling_efficiency"].notna() & (ok["accum_steps"] == 1) & (ok["loop"] == "ctl")]
    # one line per strategy measured on several devices; its 1-device point (1.0) starts it
    ok, colors = _lines(ok, "total_replicas", [*DEVICE_AXES, *OPTION_AXES], how="max")
    if ok.empty:
        return []

    def draw(ax: Any, part: pd.DataFrame) -> None:
        for name, s in part.groupby("series"):
            s = s.sort_values("total_replicas").drop_duplicates("total_replicas")
            color = colors[str(name)]  # no CI: a whisker of length 0
            _ci_line(ax, s, "total_replicas", str(name), color, y="scaling_efficiency", fill=True)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="ideal")
        ax.set_xticks(sorted(part["total_replicas"].unique()))
        ax.set_ylim(0, max(1.2, float(part["scaling_efficiency_ci_high"].astype(float).max()) * 1.1))
        ax.legend(fontsize=7)

    title = "Scaling efficiency = throughput / (N x 1-device throughput), 95% CI"
    return _facet_models(
        ok, draw, title, "scaling efficiency", "replicas x workers", out, "scaling_efficiency"
    )


def accumulation(rows: pd.DataFrame, out: Path) -> list[Path]:
    """Median examples/s (95% CI whiskers) against accumulation steps, one line per strategy,
    topology, loop and steps_per_execution; the y axis starts at 0."""
    ok, colors = _lines(_ok(rows), "accum_steps", ["accum_steps"])
    if ok.empty:
        return []

    def draw(ax: Any, part: pd.DataFrame) -> None:
        for config, s in part.sort_values("accum_steps").groupby("series"):
            _ci_line(ax, s, "accum_steps", str(config), colors[str(config)])
        _from_zero(ax, part["accum_steps"])

    title = "Gradient accumulation: examples/s vs micro-batches per update (one all-reduce per update; "
    title += "median, 95% CI)"
    return _facet_models(ok, draw, title, "examples/s", "accumulation steps (k)", out, "accumulation", 7.5)


def cross_device_ops(rows: pd.DataFrame, out: Path) -> list[Path]:
    """MirroredStrategy's cross-device ops side by side, per replica count and batch: each op's
    scaling efficiency against the same 1-replica cell (the common baseline every op starts from),
    95% CI whiskers (over group instances when measured in turns), the ideal at 1.0."""
    ok = _ok(rows)
    has_ops = ok["strategy"].isin(AXIS_BY_NAME["cross_device_ops"].applies_to)
    ok = ok[has_ops & (ok["accum_steps"] == 1) & (ok["loop"] == "ctl") & (ok["total_replicas"] > 1)]
    ok = ok[ok["scaling_efficiency"].notna()]
    if ok.empty or ok["cross_device_ops"].nunique() < 2:
        return []
    ok["group"] = labels(ok, ["cross_device_ops"]).str.replace(", ", "\n")
    axis = AXIS_BY_NAME["cross_device_ops"]

    def draw(ax: Any, part: pd.DataFrame) -> None:
        groups = sorted(part["group"].unique())
        ops = sorted(part["cross_device_ops"].unique())
        width = 0.8 / len(ops)
        for j, op in enumerate(ops):
            s = part[part["cross_device_ops"] == op].set_index("group").reindex(groups)
            x = [i + j * width for i in range(len(groups))]
            err = whiskers(s, "scaling_efficiency", fill=True)
            ax.bar(x, s["scaling_efficiency"].astype(float), width, yerr=err, capsize=3, label=axis.say(op))
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], groups, fontsize=8)
        ax.legend(fontsize=7, title="cross-device ops", title_fontsize=7)

    title = "MirroredStrategy cross-device ops: efficiency against the same 1-replica cell (95% CI)"
    return _facet_models(ok, draw, title, "scaling efficiency", "", out, "cross_device_ops")


def compile_time(rows: pd.DataFrame, out: Path) -> list[Path]:
    """compile_s (first call: tracing + first steps) and startup_s per strategy, as bars."""
    ok = _ok(rows)
    ok = ok[ok["compile_s"].notna()]
    if ok.empty:
        return []
    strategy = ("strategy", "ps", *DEVICE_AXES, *OPTION_AXES)
    ok["series"] = labels(ok, [a.name for a in AXES if a.name not in strategy])  # its cells' median
    agg = ok.groupby(["model", "series"], as_index=False)[["compile_s", "startup_s"]].median()

    def draw(ax: Any, part: pd.DataFrame) -> None:
        part = part.sort_values("compile_s")
        y = range(len(part))
        ax.barh([i + 0.2 for i in y], part["compile_s"], 0.4, label="compile_s (first call)")
        ax.barh([i - 0.2 for i in y], part["startup_s"], 0.4, label="startup_s (build)")
        ax.set_yticks(list(y), part["series"], fontsize=7)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)

    title = "Start-up and first-call (trace/compile) time, median over cells"
    return _facet_models(agg, draw, title, "", "seconds", out, "compile_time", width=6.5)


def cotenancy(rows: pd.DataFrame, out: Path) -> list[Path]:
    """Co-tenancy: aggregate examples/s of T processes sharing the same devices (95% CI whiskers)
    and each tenant's own median (band from the slowest to the fastest tenant), against T; the
    dotted line is the cell alone divided by T (a fair split of the same total)."""
    ok = _ok(rows, tenants=True)
    if "tenants" not in ok:
        return []
    ok, colors = _lines(ok, "tenants", ["tenants"])
    if ok.empty:
        return []

    def draw(ax: Any, part: pd.DataFrame) -> None:
        for cell, s in part.sort_values("tenants").groupby("series"):
            c, t, y = colors[str(cell)], s["tenants"].astype(float), s["examples_per_sec"].astype(float)
            _ci_line(ax, s, "tenants", f"{cell}: aggregate", c)
            band = (s[f"tenant_examples_per_sec_{end}"].astype(float) for end in ("min", "max"))
            ax.fill_between(t, *band, color=c, alpha=0.25, label=f"{cell}: slowest..fastest tenant")
            ax.plot(t, y / t, "s--", color=c, label=f"{cell}: per tenant (aggregate / T)")
            alone = s[s["tenants"] == 1]["examples_per_sec"]
            if len(alone):
                ax.plot(t, float(alone.iloc[0]) / t, ":", color=c, label=f"{cell}: alone / T")
        _from_zero(ax, part["tenants"])

    title = "Co-tenancy: T training processes sharing the same devices (median of timed windows, 95% CI)"
    return _facet_models(ok, draw, title, "examples/s", "tenants (processes at once)", out, "cotenancy", 7.5)


REPORT_FIGURES: dict[str, Callable[[pd.DataFrame, Path], list[Path]]] = {
    "throughput_vs_batch": throughput_vs_batch,
    "scaling_efficiency": scaling_efficiency,
    "accumulation": accumulation,
    "cross_device_ops": cross_device_ops,
    "compile_time": compile_time,
    "cotenancy": cotenancy,
}
"""The report's figures, in order."""
