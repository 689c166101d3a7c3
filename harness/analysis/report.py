"""``python -m harness report``: figures (PNG and SVG) and one self-contained HTML file for a run.

The HTML embeds its figures (PNG, base64), so it can be mailed or attached to a CI job as one file.
It holds the machine fingerprint, how the numbers were measured, the summary table, and every
unsupported, failed or invalid cell with its reason.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.analysis import plots

MACHINE_COLUMNS = ("device_kind", "device_name", "device_count", "host_cpu", "host_cores",
                   "tf_version", "keras_version", "python_version", "build_info", "fingerprint")


def _summary(rows: pd.DataFrame) -> pd.DataFrame:
    ok = rows[rows["status"] == "ok"].copy()
    if ok.empty:
        return ok
    ok["strategy"] = ok.apply(plots.label, axis=1)
    ok["examples/s [95% CI]"] = ok.apply(
        lambda r: f"{r['examples_per_sec']:,.0f} [{r['examples_per_sec_ci_low']:,.0f}.."
                  f"{r['examples_per_sec_ci_high']:,.0f}]", axis=1)
    ok["cv"] = ok["cv"].map(lambda x: "-" if pd.isna(x) else f"{x:.1%}")
    ok["efficiency"] = ok["scaling_efficiency"].map(lambda x: "-" if pd.isna(x) else f"{x:.2f}")
    ok["mfu"] = ok["mfu"].map(lambda x: "-" if pd.isna(x) else f"{x:.2%}")
    ok["compile_s"] = ok["compile_s"].map(lambda x: f"{x:.2f}")
    ok["oversubscribed"] = ok["oversubscribed"].map(lambda x: "yes" if x is True else "")
    columns = ["model", "strategy", "per_replica_batch", "global_batch", "accum_steps", "loop",
               "steps_per_execution", "precision", "examples/s [95% CI]", "cv", "efficiency", "mfu",
               "compile_s", "oversubscribed"]
    return ok[columns]


def _not_ok(rows: pd.DataFrame) -> pd.DataFrame:
    bad = rows[rows["status"] != "ok"]
    return bad[["status", "cell_id", "reason"]].sort_values(["status", "cell_id"])


def _machines(rows: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in MACHINE_COLUMNS if c in rows]
    return rows[rows["fingerprint"].notna()][cols].drop_duplicates("fingerprint")


def _method(rows: pd.DataFrame) -> str:
    p = rows.iloc[0]
    return (
        f"Each cell ran in a fresh worker process. The first call (tracing/compilation) is timed "
        f"as <code>compile_s</code> and excluded; two calibration windows size a window to about "
        f"{p['window_target_s']:g} s (<code>window_steps</code> optimizer updates inside one "
        f"<code>tf.function</code> call per steps_per_execution updates, ending with a host sync); "
        f"then {p['warmup_windows']} untimed and {p['repeats']} timed windows. Throughput is the "
        f"median over the timed windows of window_steps x effective_batch / seconds, with a 95% "
        f"percentile-bootstrap CI (10,000 resamples) and the coefficient of variation. Scaling "
        f"efficiency = throughput / (replicas x workers x the 1-device throughput of the same "
        f"configuration in the same run). MFU = throughput x analytic FLOPs per example / the "
        f"measured matmul peak. Every column is documented in results/README.md.")


def _table(df: pd.DataFrame) -> str:
    return df.to_html(index=False, escape=True, border=0, classes="t", na_rep="-")


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table.t{border-collapse:collapse;font-size:12px}table.t td,table.t th{padding:3px 8px;
border-bottom:1px solid #ddd;text-align:left}img{max-width:100%;border:1px solid #eee;margin:8px 0}
code{background:#f4f4f4;padding:1px 3px}"""


def build_html(rows: pd.DataFrame, figures: Sequence[Path], title: str) -> str:
    """The report page, figures embedded as base64 PNG."""
    imgs = []
    for path in figures:
        if path.suffix == ".png":
            data = base64.b64encode(path.read_bytes()).decode()
            imgs.append(f'<h3>{html.escape(path.stem.replace("_", " "))}</h3>'
                        f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">')
    counts = rows["status"].value_counts().to_dict()
    runs = ", ".join(sorted(rows["run_id"].dropna().unique()))
    logical = rows["logical_devices"].fillna(False).any()
    notes = ("<p><b>CPU run:</b> replicas are logical devices (or local worker processes) sharing "
             "one CPU; extra replicas add no compute, so efficiencies near 1/N say nothing about "
             "real devices.</p>" if logical else "")
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Runs: {html.escape(runs)}. Generated {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} "
        f"UTC. Cells: {html.escape(json.dumps(counts))}"
        + (" (a cell measured in several of these runs: its newest row)" if rows["run_id"].nunique() > 1
           else "") + ".</p>",
        "<h2>Machine</h2>", _table(_machines(rows)),
        "<h2>How the numbers were measured</h2>", f"<p>{_method(rows)}</p>", notes,
        "<h2>Summary (ok cells)</h2>", _table(_summary(rows)),
        "<h2>Figures</h2>", *imgs,
        "<h2>Unsupported, failed and invalid cells</h2>",
        _table(_not_ok(rows)) if (rows["status"] != "ok").any() else "<p>None.</p>",
        "</body></html>"])


def newest_per_cell(rows: pd.DataFrame) -> pd.DataFrame:
    """Each cell's newest row per machine (by timestamp), so a report over several runs never
    averages or stacks repeated measurements of one cell."""
    if rows.empty:
        return rows
    order = rows.sort_values("timestamp")
    return order.drop_duplicates(["cell_id", "fingerprint"], keep="last").sort_index()


def write_report(rows: pd.DataFrame, out: Path, title: str) -> list[Path]:
    """Every figure of :data:`harness.plots.REPORT_FIGURES` that the rows support, then
    ``report.html``; returns the paths written. Over several runs, each cell's newest row."""
    rows = newest_per_cell(rows)
    figures: list[Path] = []
    for draw in plots.REPORT_FIGURES.values():
        figures += draw(rows, out / "figures")
    page = out / "report.html"
    out.mkdir(parents=True, exist_ok=True)
    page.write_text(build_html(rows, figures, title))
    return [*figures, page]
