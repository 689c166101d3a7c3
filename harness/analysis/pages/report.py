"""``python -m harness report``: figures (PNG and SVG) and one self-contained HTML file for a run.

The HTML embeds its figures (PNG, base64), so it can be mailed or attached to a CI job as one file.
It opens with the answer (:mod:`harness.analysis.run.answer`), then every comparison measured in turns
and the rest of ``report.html``'s sections. Configurations are named in words
(:func:`harness.analysis.run.answer.labels`); ids stay in the files."""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.analysis.comparisons.hardware_text import verdict_rule
from harness.analysis.pages import glossary
from harness.analysis.run import answer, answer_figure, explain, findings, plots, render
from harness.analysis.run.tables import num
from harness.analysis.scale import scaling
from harness.analysis.scale.scaling_figure import predicted_vs_measured
from harness.analysis.versions import ab
from harness.analysis.versions.ab_text import ci
from harness.analysis.versions.ratio_figure import ab_pairs
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, RatioRow, Status
from harness.formulas import stats

MACHINE_COLUMNS: tuple[str, ...] = ("device_kind", "device_name", "device_count", "host_cpu", "host_cores")
MACHINE_COLUMNS += ("tf_version", "keras_version", "python_version", "build_info", "fingerprint")


@dataclass(frozen=True)
class Method:
    """What the page's method paragraph says of the run: processes per cell, whether in turns,
    window length (s), timed and warm-up windows, rows whose CI the history widened (of all
    measured rows)."""

    processes: str
    turns: bool
    window_s: float
    repeats: int
    warmup: int
    widened: int
    measured: int


def _cells(rows: pd.DataFrame) -> list[CellRow]:
    """A cells frame's typed rows, in order."""
    return unflatten_all(CellRow, rows.to_dict("records"))


def _ratios(ratios: pd.DataFrame | None) -> list[RatioRow]:
    return [] if ratios is None or ratios.empty else unflatten_all(RatioRow, ratios.to_dict("records"))


SUMMARY = (
    *("model", "configuration", "global_batch", "processes", "examples/s [95% CI]"),
    *("cv between / within processes", "efficiency [95% CI]", "mfu", "compile_s", "oversubscribed"),
)
"""The columns of the report's table of each configuration's own figure."""


def _summary(records: Sequence[CellRow], named: dict[str, str]) -> list[tuple[object, ...]]:
    """Each ok configuration's own figure, its spread, efficiency and MFU (:data:`SUMMARY`)."""
    out: list[tuple[object, ...]] = []
    for r in (r for r in records if r.status == Status.OK):
        eps, s = r.examples_per_sec, r.spread
        ci = "" if eps.low is None or eps.high is None else f" [{eps.low:,.0f}..{eps.high:,.0f}]"
        cv = f"{num(s.cv_between_processes, '.1%')} / {num(s.cv_within_process, '.1%')}"
        cv += " unstable" if s.unstable else ""
        figures = (f"{eps.value:,.0f}{ci}", cv, _efficiency(r), num(r.peak.mfu, ".2%"))
        more = (num(r.timing.compile_s, ".2f"), "yes" if r.ran.oversubscribed else "")
        out.append((r.cell.model, named[r.cell.cell_id], r.cell.global_batch, s.processes, *figures, *more))
    return out


def _efficiency(r: CellRow) -> str:
    """Scaling efficiency with its CI (none on one device), ``~1`` where the CI holds 1."""
    e = r.efficiency.scaling_efficiency
    if e.value is None or math.isnan(e.value):
        return "-"
    if e.low is None or e.high is None or math.isnan(e.low) or r.cell.replicas * r.cell.workers == 1:
        return f"{e.value:.2f}"
    return f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]" + (" ~1" if e.low <= 1 <= e.high else "")


def _method(records: Sequence[CellRow]) -> Method:
    """The method paragraph's figures, from the first row's timing and the ok rows' spreads."""
    t, ok = records[0].timing, [r for r in records if r.status == Status.OK]
    counts = [r.spread.processes for r in ok if r.spread.processes is not None]
    procs = f"{min(counts)} to {max(counts)}" if ok and len(counts) == len(ok) else "several"
    turns = any(r.efficiency.ratio_instances is not None for r in ok)
    widened = sum(1 for r in ok if (r.spread.ci_history_runs or 0) > 0)
    window = math.nan if t.window_target_s is None else t.window_target_s
    return Method(procs, turns, window, t.repeats or 0, t.warmup_windows or 0, widened, len(ok))


def _table(df: pd.DataFrame) -> str:
    """The frame as an HTML table (the page includes it unescaped: pandas escapes its cells)."""
    return df.to_html(index=False, escape=True, border=0, classes="t", na_rep="-")


def _png(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def build_html(
    rows: pd.DataFrame,
    figures: Sequence[Path],
    title: str,
    collectives: pd.DataFrame | None = None,
    ratios: pd.DataFrame | None = None,
) -> str:
    """The report page, figures embedded as base64 PNG."""
    pngs = [p for p in figures if p.suffix == ".png"]
    records, typed = _cells(rows), _ratios(ratios)
    named = answer.labels(records)
    breakdown = explain.breakdown_table(records)
    machines = rows[rows["fingerprint"].notna()][[c for c in MACHINE_COLUMNS if c in rows]]
    # (status, model, configuration, reason) of each configuration not measured ok
    bad = [(str(r.status), r.cell.model, named[r.cell.cell_id], r.reason or "-") for r in records]
    return render.page(
        "report.html",
        title=title,
        runs=", ".join(sorted(rows["run_id"].dropna().unique())),
        generated=dt.datetime.now(dt.UTC),
        counts=", ".join(f"{n} {status}" for status, n in rows["status"].value_counts().items()),
        several=rows["run_id"].nunique() > 1,
        answer=answer.render_html(answer.answers(records, typed), records),
        picture=next((_png(p) for p in pngs if p.stem == ANSWER_FIGURE), None),
        findings=findings.render_html(records, typed),
        devices=explain.devices_working(records),
        scaling_buys=explain.what_scaling_buys(records),
        accumulation=explain.does_accumulation_help(records, typed),
        breakdown=None if breakdown.empty else _table(breakdown),
        collectives=collectives is not None and not collectives.empty,
        predictions=_predicted(rows, collectives),
        machines=_table(machines.drop_duplicates("fingerprint")),
        method=_method(records),
        verdict_rule=verdict_rule(_min_effect(typed)),
        min_history_runs=stats.MIN_HISTORY_RUNS,
        history_runs=stats.HISTORY_RUNS,
        logical=rows["logical_devices"].fillna(False).any(),
        terms=glossary.TERMS,
        unstable=[(r.cell.model, named[r.cell.cell_id], r.spread) for r in records if r.spread.unstable],
        header=SUMMARY,
        summary=_summary(records, named),
        figures=[(p.stem, _png(p)) for p in pngs if p.stem != ANSWER_FIGURE],
        not_ok=sorted(row for row in bad if row[0] != Status.OK),
    )


def _min_effect(ratios: Sequence[RatioRow]) -> float:
    """The run's --min-effect as its ratio rows record it (the default where it has none)."""
    return ratios[0].min_effect if ratios else stats.MIN_EFFECT


ANSWER_FIGURE = "answer"
"""The stem of the picture at the top of the report: each configuration against the leader."""


def answer_panels(found: Sequence[answer.Answer]) -> list[answer_figure.Panel]:
    """The answer's picture, one panel per model: the leader at 1 and each contender's ratio to it."""
    panels = []
    for a in found:
        bars = [answer_figure.Bar(a.label, 1.0, None, None, "leader")]
        bars += [
            answer_figure.Bar(v.label, v.ratio.ratio.value, v.ratio.ratio.low, v.ratio.ratio.high, v.verdict)
            for v in a.versus
        ]
        panels.append(answer_figure.Panel(a.title[:1].upper() + a.title[1:], tuple(bars)))
    return panels


def _predicted(rows: pd.DataFrame, collectives: pd.DataFrame | None) -> str | None:
    """Each measured multi-device cell beside the scaling model's prediction for it (None: no
    collectives table or no such cell)."""
    if (table := scaling.report_predictions(_cells(rows), collectives)).empty:
        return None
    table["measured [95% CI]"] = table.apply(
        lambda r: f"{r['measured']:,.0f} [{r['measured_ci_low']:,.0f}..{r['measured_ci_high']:,.0f}]", axis=1
    )
    table["predicted"] = table["predicted"].map(lambda x: f"{x:,.0f}")
    table["error"] = table["error"].map(lambda x: f"{x:+.0%}")
    return _table(
        table[["model", "cell_id", "devices", "measured [95% CI]", "predicted", "error", "allreduce_from"]]
    )


def ab_rule(cell: pd.DataFrame, pairs: int) -> ab.Rule:
    """The rule ``ab`` judged a cell's ``pairs`` with, from its rows (``cell``). No more pairs asked
    than the rows hold: only an interrupted cell holds fewer than its --min-pairs."""
    least = max(2, min(pairs, int(cell["ab_min_pairs"].iloc[0])))
    return ab.Rule(float(cell["ab_min_effect"].iloc[0]), min_pairs=least, max_pairs=max(pairs, least))


def ab_html(paired: pd.DataFrame, figures: Sequence[Path], title: str) -> str:
    """The page of an ``ab`` comparison: per cell the pairs' B/A with its verdict under the rule its
    run used (:func:`ab_rule`), and the pairs' figure."""
    lines = []
    modes = paired.groupby("cell_id")["ab_mode"].first().to_dict() if "ab_mode" in paired else {}
    for cell_id, part in ab.pair_ratios(paired).groupby("cell_id"):
        rule = ab_rule(paired[paired["cell_id"] == cell_id], len(part))
        d = ab.decide(list(part["ratio"]), rule)
        effect = f"{rule.min_effect:.0%}"
        lines.append(
            (cell_id, modes.get(cell_id) or "alternate", d.pairs, f"{d.ratio:.3f}", ci(d), effect, d.verdict)
        )
    versions = paired.groupby("ab_side")["tf_version"].first().to_dict() if "tf_version" in paired else {}
    return render.page(
        "report_ab.html",
        title=title,
        sides=", ".join(f"{k}: TensorFlow {v}" for k, v in sorted(versions.items())),
        lines=lines,
        figures=[(p.stem, _png(p)) for p in figures if p.suffix == ".png"],
    )


def newest_per_cell(rows: pd.DataFrame) -> pd.DataFrame:
    """Each cell's newest row per machine (by timestamp), so a report over several runs never
    averages or stacks repeated measurements of one cell."""
    if rows.empty:
        return rows
    rows = rows[rows["status"] != Status.NOT_MEASURED]  # a later run that never reached it hides nothing
    return rows.sort_values("timestamp").drop_duplicates(["cell_id", "fingerprint"], keep="last").sort_index()


def write_report(
    rows: pd.DataFrame,
    out: Path,
    title: str,
    collectives: pd.DataFrame | None = None,
    ratios: pd.DataFrame | None = None,
) -> list[Path]:
    """Every figure of :data:`harness.analysis.run.plots.REPORT_FIGURES` that the rows support, then
    ``report.html``; returns the paths written. Over several runs, each cell's newest row."""
    paired = rows[rows["ab_id"].notna()] if "ab_id" in rows else rows.iloc[0:0]
    rows = newest_per_cell(rows.drop(paired.index))
    figures: list[Path] = ab_pairs(paired, out / "figures")
    if rows.empty:  # an ab comparison alone
        html = ab_html(paired, figures, title)
    else:
        records = _cells(rows)
        found = answer.answers(records, _ratios(ratios))
        figures += answer_figure.draw(
            answer_panels(found), _min_effect(_ratios(ratios)), out / "figures", ANSWER_FIGURE
        )
        for draw in plots.REPORT_FIGURES.values():
            figures += draw(rows, out / "figures")
        predicted = scaling.report_predictions(records, collectives)
        figures += predicted_vs_measured(predicted, out / "figures")
        html = build_html(rows, figures, title, collectives, ratios)
    page = out / "report.html"
    out.mkdir(parents=True, exist_ok=True)
    page.write_text(html)
    return [*figures, page]
