"""``python -m harness report``: figures (PNG and SVG) and one self-contained HTML file for a run.

The HTML embeds its figures (PNG, base64), so it can be mailed or attached to a CI job as one file.
It opens with the answer (:mod:`harness.analysis.answer`: per model what to train with, by how
much, why and what to try next, and its picture: each configuration against the leader), then every
comparison measured in turns, the questions users ask (is every device working, what a second
device buys, does accumulation help), where each configuration's update time goes, the machine,
how the numbers were measured, the words it uses, the unstable configurations, the figures of each
configuration with their CIs, the plots, and every unsupported, failed or invalid one with its
reason. Configurations are named in words (:func:`harness.analysis.answer.labels`); ids stay in
the files.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.analysis import answer, answer_figure, explain, findings, glossary, plots, scaling
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, RatioRow, Status
from harness.formulas import stats

MACHINE_COLUMNS = (
    "device_kind",
    "device_name",
    "device_count",
    "host_cpu",
    "host_cores",
    "tf_version",
    "keras_version",
    "python_version",
    "build_info",
    "fingerprint",
)


def _cells(rows: pd.DataFrame) -> list[CellRow]:
    """A cells frame's typed rows, in order."""
    return unflatten_all(CellRow, rows.to_dict("records"))


def _pct(x: float | None) -> str:
    return "-" if pd.isna(x) else f"{x:.1%}"


def _ratios(ratios: pd.DataFrame | None) -> list[RatioRow]:
    return [] if ratios is None or ratios.empty else unflatten_all(RatioRow, ratios.to_dict("records"))


def _summary(rows: pd.DataFrame, named: dict[str, str]) -> pd.DataFrame:
    ok = rows[rows["status"] == Status.OK].copy()
    if ok.empty:
        return ok
    ok["configuration"] = ok["cell_id"].map(named)
    ok["examples/s [95% CI]"] = ok.apply(
        lambda r: (
            f"{r['examples_per_sec']:,.0f} [{r['examples_per_sec_ci_low']:,.0f}.."
            f"{r['examples_per_sec_ci_high']:,.0f}]"
        ),
        axis=1,
    )
    ok["cv between / within processes"] = ok.apply(
        lambda r: (
            f"{_pct(r['cv_between_processes'])} / {_pct(r['cv_within_process'])}"
            + (" unstable" if r.get("unstable") is True else "")
        ),
        axis=1,
    )
    ok["efficiency [95% CI]"] = ok.apply(_efficiency, axis=1)
    ok["mfu"] = ok["mfu"].map(lambda x: "-" if pd.isna(x) else f"{x:.2%}")
    ok["compile_s"] = ok["compile_s"].map(lambda x: f"{x:.2f}")
    ok["oversubscribed"] = ok["oversubscribed"].map(lambda x: "yes" if x is True else "")
    columns = [
        "model",
        "configuration",
        "global_batch",
        "processes",
        "examples/s [95% CI]",
        "cv between / within processes",
        "efficiency [95% CI]",
        "mfu",
        "compile_s",
        "oversubscribed",
    ]
    return ok[columns]


def _efficiency(r: pd.Series) -> str:
    eff, lo, hi = (
        r.get(k, math.nan)
        for k in ("scaling_efficiency", "scaling_efficiency_ci_low", "scaling_efficiency_ci_high")
    )
    if pd.isna(eff):
        return "-"
    if pd.isna(lo) or r["replicas"] * r["workers"] == 1:
        return f"{eff:.2f}"
    return f"{eff:.2f} [{lo:.2f}, {hi:.2f}]" + (" ~1" if lo <= 1 <= hi else "")


def _unstable(rows: pd.DataFrame, named: dict[str, str]) -> str:
    bad = rows[(rows["status"] == Status.OK) & (rows["unstable"].fillna(False).astype(bool))]
    if bad.empty:
        return "<p>No configuration is unstable.</p>"
    items = "".join(
        f"<li>{html.escape(str(r.model))}, {html.escape(named[str(r.cell_id)])}: coefficient of "
        f"variation between processes {r.cv_between_processes:.1%} over {r.processes} processes</li>"
        for r in bad.itertuples()
    )
    return (
        f"<p>{len(bad)} configurations whose processes disagreed (coefficient of variation above "
        f"the run's threshold); their own figures move between re-runs (ratios measured in turns "
        f"are not affected):</p><ul>{items}</ul>"
    )


def _not_ok(rows: pd.DataFrame, named: dict[str, str]) -> pd.DataFrame:
    bad = rows[rows["status"] != Status.OK].copy()
    bad["configuration"] = bad["cell_id"].map(named)
    return bad[["status", "model", "configuration", "reason"]].sort_values(
        ["status", "model", "configuration"]
    )


def _machines(rows: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in MACHINE_COLUMNS if c in rows]
    return rows[rows["fingerprint"].notna()][cols].drop_duplicates("fingerprint")


def _history_text(ok: pd.DataFrame) -> str:
    """What the CIs cover: this run's processes, or also the drift between runs."""
    if "ci_history_runs" in ok:
        used = ok["ci_history_runs"].fillna(0).astype(int)
    else:
        used = pd.Series(0, index=ok.index)
    widened = int((used > 0).sum())
    text = (
        f"{widened} of {len(ok)} measured rows had at least {stats.MIN_HISTORY_RUNS} earlier "
        f"runs of the same cell on the same machine and software in the results folder: their "
        f"CI is widened to the spread of those runs' figures (up to {stats.HISTORY_RUNS}, "
        f"<code>ci_history_runs</code>), so it also covers drift between runs."
    )
    if widened < len(ok):
        text += (
            " The other rows' CIs cover this run's processes only: processes minutes apart "
            "share the machine's slow and fast spells, so on a noisy machine a re-run can "
            "fall outside them (docs/explanation/calibration.md measures how far)."
        )
    return text


def _method(rows: pd.DataFrame, min_effect: float = stats.MIN_EFFECT) -> str:
    p = rows.iloc[0]
    ok = rows[rows["status"] == Status.OK]
    procs = (
        f"{int(ok['processes'].min())} to {int(ok['processes'].max())}"
        if not ok.empty and ok["processes"].notna().all()
        else "several"
    )
    turns = "ratio_instances" in ok and ok["ratio_instances"].notna().any()
    how = (
        f"Every cell was measured in {procs} independent processes, each a fresh worker that was a "
        "member of a group instance: the cells a reported ratio compares were live at once and took "
        f"turns, one timed window of about {p['window_target_s']:g} s with the whole machine while "
        f"the others waited without using CPU, {p['repeats']} turns per process. "
        if turns
        else f"Every cell was measured in {procs} independent processes (passes over the run, each "
        f"pass in a new order, each process a fresh worker), {p['repeats']} timed windows each of "
        f"about {p['window_target_s']:g} s. "
    )
    ratios = (
        "Ratios (scaling efficiency = throughput / (replicas x workers x the 1-device throughput "
        "of the same configuration), co-tenancy, the findings above) measured in turns take each "
        "instance's mean log ratio of adjacent turns and a Student-t CI over instances; verdicts "
        "control the false discovery rate across the run's comparisons (Benjamini-Hochberg, 5%). "
        if turns
        else "Ratios (scaling efficiency = throughput / (replicas x workers x the 1-device "
        "throughput of the same configuration), co-tenancy, the findings above) carry a CI from "
        "Welch's t over both rows' process figures. "
    )
    return (
        f"{how}Inside a process the first call (tracing/compilation) is timed as "
        f"<code>compile_s</code> and excluded; two calibration windows size a window "
        f"(<code>window_steps</code> optimizer updates, ending with a host sync); "
        f"{p['warmup_windows']} untimed windows follow. A process's figure is the median of its "
        f"window throughputs (window_steps x effective_batch / seconds); the row's figure is the "
        f"median over its processes and its 95% CI a Student-t interval over the process figures "
        f"on the log scale (between- and within-process noise of this run). "
        f"{_history_text(ok)} A cell whose processes disagree by a coefficient of variation above "
        f"the run's threshold is <i>unstable</i>. {ratios}A ratio is higher or lower when its CI "
        f"excludes 1 and it differs from 1 by at least {min_effect:.0%}, equivalent when its CI "
        f"lies within {min_effect:.0%} of 1, else undecided (for an efficiency: of the speed-up, "
        f"its ratio to one device). MFU = throughput x analytic FLOPs per example / "
        f"the run's matmul peak for the cell's dtype and cores (median of its own peak processes). "
        f"Every column and formula is in results/README.md."
    )


def _table(df: pd.DataFrame) -> str:
    return df.to_html(index=False, escape=True, border=0, classes="t", na_rep="-")


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table.t{border-collapse:collapse;font-size:12px}table.t td,table.t th{padding:3px 8px;
border-bottom:1px solid #ddd;text-align:left}img{max-width:100%;border:1px solid #eee;margin:8px 0}
code{background:#f4f4f4;padding:1px 3px}"""


def build_html(
    rows: pd.DataFrame,
    figures: Sequence[Path],
    title: str,
    collectives: pd.DataFrame | None = None,
    ratios: pd.DataFrame | None = None,
) -> str:
    """The report page, figures embedded as base64 PNG."""
    imgs = []
    picture = ""
    for path in figures:
        if path.suffix == ".png" and path.stem == ANSWER_FIGURE:
            data = base64.b64encode(path.read_bytes()).decode()
            picture = f'<img alt="each configuration against the leader" src="data:image/png;base64,{data}">'
        elif path.suffix == ".png":
            data = base64.b64encode(path.read_bytes()).decode()
            imgs.append(
                f"<h3>{html.escape(path.stem.replace('_', ' '))}</h3>"
                f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'
            )
    records, typed = _cells(rows), _ratios(ratios)
    named = answer.labels(records)
    counts = rows["status"].value_counts().to_dict()
    runs = ", ".join(sorted(rows["run_id"].dropna().unique()))
    logical = rows["logical_devices"].fillna(False).any()
    notes = (
        "<p><b>CPU run:</b> replicas are logical devices (or local worker processes) sharing "
        "one CPU; extra replicas add no compute, so efficiencies near 1/N say nothing about "
        "real devices.</p>"
        if logical
        else ""
    )
    return "\n".join(
        [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            f"<p>Runs: {html.escape(runs)}. Generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} "
            f"UTC. Configurations: {html.escape(', '.join(f'{n} {status}' for status, n in counts.items()))}"
            + (
                " (a configuration measured in several of these runs: its newest row)"
                if rows["run_id"].nunique() > 1
                else ""
            )
            + ".</p>",
            "<h2>What to train with here</h2>",
            answer.render_html(answer.answers(records, typed), records),
            picture,
            "<h2>Every comparison measured in turns</h2>",
            findings.render_html(records, typed),
            _why(rows, typed),
            "<h2>Measured against the scaling model</h2>",
            _predicted(rows, collectives),
            "<h2>Machine</h2>",
            _table(_machines(rows)),
            "<h2>How the numbers were measured</h2>",
            f"<p>{_method(rows, _min_effect(typed))}</p>",
            notes,
            "<h2>Words used here</h2>",
            glossary.html(),
            "<h2>Unstable cells</h2>",
            _unstable(rows, named),
            "<h2>Each configuration's own figure (separately measured processes; not a ranking)</h2>",
            _table(_summary(rows, named)),
            "<h2>Figures</h2>",
            *imgs,
            "<h2>Unsupported, failed and invalid cells</h2>",
            _table(_not_ok(rows, named)) if (rows["status"] != Status.OK).any() else "<p>None.</p>",
            "</body></html>",
        ]
    )


def _min_effect(ratios: Sequence[RatioRow]) -> float:
    """The run's --min-effect as its ratio rows record it (the default before they did)."""
    return next((r.min_effect for r in ratios if r.min_effect), stats.MIN_EFFECT)


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


def _list(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def _predicted(rows: pd.DataFrame, collectives: pd.DataFrame | None) -> str:
    """Each measured multi-device cell beside the scaling model's prediction for it."""
    if collectives is None or collectives.empty:
        return (
            "<p>No collectives table under this results folder: run <code>python -m harness "
            "run --sweep collectives</code> to see each multi-device cell beside its predicted "
            "figure.</p>"
        )
    lines = scaling.report_predictions(_cells(rows), collectives)
    if not lines:
        return "<p>No multi-device cell of this run has both a 1-device baseline and all-reduce times.</p>"
    table = scaling.predictions_frame(lines)
    table["measured [95% CI]"] = table.apply(
        lambda r: f"{r['measured']:,.0f} [{r['measured_ci_low']:,.0f}..{r['measured_ci_high']:,.0f}]", axis=1
    )
    table["predicted"] = table["predicted"].map(lambda x: f"{x:,.0f}")
    table["error"] = table["error"].map(lambda x: f"{x:+.0%}")
    table = table[
        ["model", "cell_id", "devices", "measured [95% CI]", "predicted", "error", "allreduce_from"]
    ]
    return (
        "<p>Predicted from the cell's 1-device baseline and the all-reduce cost (docs/how-to/hardware.md, "
        "Predict scaling from the all-reduce): step(n) = step(1) x core share + all-reduce(n); error = "
        "(predicted - measured) / measured.</p>" + _table(table)
    )


def _why(rows: pd.DataFrame, ratios: Sequence[RatioRow]) -> str:
    """The questions answered from the rows, then where each configuration's update time goes."""
    records = _cells(rows)
    table = explain.breakdown_table(records)
    parts = (
        "<p>Measured in each cell's first process after its timed windows: every part of an "
        "update timed alone (compute with no reduction, one all-reduce of the gradient set, "
        "one update's batch through the input pipeline, one dispatch / steps_per_execution), "
        "in rounds alternating with the cell's own update (the step here, parts_step_s); "
        "overlap = (sum of parts - step) / step, negative when the step holds time no part "
        "explains; 'no verdict' where a part took longer than the step. On a GPU instead: one "
        "window of the cell's own update under TensorFlow's profiler (profiled_step_s), split on "
        "the busiest GPU's timeline into device (kernels), collectives, input wait (the GPU idle "
        "while the host waited for the next batch) and host (the GPU idle otherwise: waiting for "
        "the host to launch kernels), which add up to the step. Formulas in "
        "results/README.md.</p>" + _table(table)
        if not table.empty
        else "<p>No configuration's update was broken down in this run (run with --breakdown).</p>"
    )
    return "\n".join(
        [
            "<h2>Questions</h2>",
            "<h3>Is every device doing work?</h3>",
            _list(explain.devices_working(records)),
            "<h3>What does a second replica or worker buy, and what eats the rest?</h3>",
            _list(explain.what_scaling_buys(records)),
            "<h3>Does gradient accumulation help, and why?</h3>",
            _list(explain.does_accumulation_help(records, ratios)),
            "<h2>Why: where an update's time goes</h2>",
            parts,
        ]
    )


def ab_html(paired: pd.DataFrame, figures: Sequence[Path], title: str) -> str:
    """The page of an ``ab`` comparison: per cell the pairs' B/A with the default rule's verdict,
    and the pairs' figure."""
    from harness.analysis import ab

    lines = []
    modes = paired.groupby("cell_id")["ab_mode"].first().to_dict() if "ab_mode" in paired else {}
    for cell_id, part in ab.pair_ratios(paired).groupby("cell_id"):
        d = ab.decide(list(part["ratio"]), ab.Rule(min_pairs=2, max_pairs=max(len(part), 2)))
        lines.append(
            {
                "cell": cell_id,
                "mode": modes.get(cell_id) or "alternate",
                "pairs": d.pairs,
                "B/A": f"{d.ratio:.3f}",
                "95% CI": "-" if d.low != d.low else f"{d.low:.3f}..{d.high:.3f}",
                "verdict on all pairs (min effect 2%)": d.verdict,
            }
        )
    versions = paired.groupby("ab_side")["tf_version"].first().to_dict() if "tf_version" in paired else {}
    imgs = [
        f'<img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}">'
        for p in figures
        if p.suffix == ".png"
    ]
    return "\n".join(
        [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            "<p>A/B comparison in pairs of fresh processes (duet: A and B at once on the same CPUs, "
            "timing together; alternate: back to back; order random per pair). B/A: geometric mean "
            "of the pairs' throughput ratios, 95% Student-t CI. Sides: "
            + html.escape(", ".join(f"{k}: TensorFlow {v}" for k, v in sorted(versions.items())))
            + ".</p>",
            _table(pd.DataFrame(lines)),
            *imgs,
            "</body></html>",
        ]
    )


def newest_per_cell(rows: pd.DataFrame) -> pd.DataFrame:
    """Each cell's newest row per machine (by timestamp), so a report over several runs never
    averages or stacks repeated measurements of one cell."""
    if rows.empty:
        return rows
    rows = rows[rows["status"] != Status.NOT_MEASURED]  # a later run that never reached it hides nothing
    order = rows.sort_values("timestamp")
    return order.drop_duplicates(["cell_id", "fingerprint"], keep="last").sort_index()


def write_report(
    rows: pd.DataFrame,
    out: Path,
    title: str,
    collectives: pd.DataFrame | None = None,
    ratios: pd.DataFrame | None = None,
) -> list[Path]:
    """Every figure of :data:`harness.analysis.plots.REPORT_FIGURES` that the rows support, then
    ``report.html``; returns the paths written. Over several runs, each cell's newest row."""
    paired = rows[rows["ab_id"].notna()] if "ab_id" in rows else rows.iloc[0:0]
    rows = newest_per_cell(rows.drop(paired.index))
    figures: list[Path] = plots.ab_pairs(paired, out / "figures")
    if rows.empty:  # an ab comparison alone
        page = out / "report.html"
        out.mkdir(parents=True, exist_ok=True)
        page.write_text(ab_html(paired, figures, title))
        return [*figures, page]
    records = _cells(rows)
    found = answer.answers(records, _ratios(ratios))
    figures += answer_figure.draw(
        answer_panels(found), _min_effect(_ratios(ratios)), out / "figures", ANSWER_FIGURE
    )
    for draw in plots.REPORT_FIGURES.values():
        figures += draw(rows, out / "figures")
    if collectives is not None and not collectives.empty:
        figures += plots.predicted_vs_measured(
            scaling.predictions_frame(scaling.report_predictions(_cells(rows), collectives)), out / "figures"
        )
    page = out / "report.html"
    out.mkdir(parents=True, exist_ok=True)
    page.write_text(build_html(rows, figures, title, collectives, ratios))
    return [*figures, page]
