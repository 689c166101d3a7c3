"""``nightly``'s dashboard: one static HTML page per results folder (no script, no network: it opens
from disk). Per series, newest first: a chart of the candidate/reference ratio with its 95% CIs,
alarm nights marked and change points drawn; a table of every night with its label, both
builds' versions and both decisions. The page names the machine and the reference build."""

from __future__ import annotations

import html
import math

import pandas as pd

from harness.contract.records import Status

W, H, PAD = 760, 220, 44
"""Chart size and margin (px)."""

COLORS = {"regression": "#c62828", "improvement": "#2e7d32"}


def _f(value: object, fmt: str = ".3f") -> str:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return "-" if not math.isfinite(x) else format(x, fmt)


def _y(value: float, low: float, high: float) -> float:
    return PAD / 2 + (H - PAD) * (high - value) / (high - low)


def chart(nights: pd.DataFrame) -> str:
    """An inline SVG of one series (oldest left): ratio points with CI bars, the reference's 1.0,
    alarm nights coloured, change points as dashed lines."""
    ok = nights[nights["status"] == Status.OK].reset_index(drop=True)
    if ok.empty:
        return "<p>No night of this series has a point yet.</p>"
    values = pd.concat([ok["ratio_ci_low"], ok["ratio_ci_high"], ok["ratio"]]).astype(float).dropna()
    low, high = min(values.min(), 0.97), max(values.max(), 1.03)
    pad = (high - low) * 0.08
    low, high = low - pad, high + pad
    step = (W - 2 * PAD) / max(len(ok) - 1, 1)
    xs = [PAD + i * step if len(ok) > 1 else W / 2 for i in range(len(ok))]
    parts = [f'<svg width="{W}" height="{H}" role="img" xmlns="http://www.w3.org/2000/svg">']
    for tick in (low + pad, 1.0, high - pad):
        y = _y(tick, low, high)
        dash = "" if tick == 1.0 else ' stroke-dasharray="2,3"'
        parts.append(f'<line x1="{PAD}" x2="{W - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="#999"{dash}/>')
        parts.append(f'<text x="4" y="{y + 4:.1f}" font-size="11">{tick:.3f}</text>')
    labels = list(ok["label"].astype(str))
    for at in ok["change_point"].dropna().astype(str):
        if at in labels:
            x = xs[labels.index(at)] - step / 2
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{PAD / 2}" y2="{H - PAD / 2}" stroke="#6a1b9a" '
                f'stroke-dasharray="6,4"><title>change point before {html.escape(at)}</title></line>'
            )
    path = " ".join(f"{x:.1f},{_y(float(r), low, high):.1f}" for x, r in zip(xs, ok["ratio"], strict=True))
    parts.append(f'<polyline points="{path}" fill="none" stroke="#1565c0"/>')
    for x, row in zip(xs, ok.to_dict("records"), strict=True):
        color = next((COLORS[a] for a in str(row["alarm"] or "").split(",") if a in COLORS), "#1565c0")
        if pd.notna(row["ratio_ci_low"]) and pd.notna(row["ratio_ci_high"]):
            y1, y2 = _y(float(row["ratio_ci_low"]), low, high), _y(float(row["ratio_ci_high"]), low, high)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" stroke="{color}"/>')
        tip = html.escape(
            f"{row['label']}: {_f(row['ratio'])} [{_f(row['ratio_ci_low'])}, {_f(row['ratio_ci_high'])}] {row['verdict']}"
        )
        parts.append(
            f'<circle cx="{x:.1f}" cy="{_y(float(row["ratio"]), low, high):.1f}" r="4" fill="{color}">'
            f"<title>{tip}</title></circle>"
        )
    parts.append(f'<text x="{PAD}" y="{H - 6}" font-size="11">{html.escape(labels[0])}</text>')
    parts.append(
        f'<text x="{W - 8}" y="{H - 6}" font-size="11" text-anchor="end">{html.escape(labels[-1])}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


COLUMNS = (
    ("label", "night"),
    ("timestamp", "when (UTC)"),
    ("ratio", "cand/ref"),
    ("ci", "95% CI"),
    ("pairs", "pairs"),
    ("change", "vs baseline"),
    ("verdict", "rule (a)"),
    ("cp", "rule (b)"),
    ("candidate_versions", "candidate"),
    ("reference_versions", "reference"),
)


def _row_html(r: pd.Series) -> str:
    cells = {
        "label": r["label"],
        "timestamp": str(r["timestamp"])[:16].replace("T", " "),
        "ratio": _f(r["ratio"]),
        "ci": f"{_f(r['ratio_ci_low'])}..{_f(r['ratio_ci_high'])}",
        "pairs": r["pairs"],
        "change": _f(r["change"]),
        "verdict": r["verdict"] if r["status"] == Status.OK else f"{r['status']}: {r['reason']}",
        "cp": (
            f"x{_f(r['change_point_shift'])} from {r['change_point']} (p {_f(r['change_point_p'], '.4f')}"
            f"{', new' if r['change_point_new'] is True else ', confirms (a)'})"
            if pd.notna(r["change_point"])
            else ""
        ),
        "candidate_versions": r["candidate_versions"],
        "reference_versions": r["reference_versions"],
    }
    alarm = next((a for a in str(r["alarm"] if pd.notna(r["alarm"]) else "").split(",") if a in COLORS), None)
    style = f' style="color:{COLORS[alarm]};font-weight:bold"' if alarm else ""
    return f"<tr{style}>" + "".join(f"<td>{html.escape(str(cells[k]))}</td>" for k, _ in COLUMNS) + "</tr>"


CSS = (
    "body{font-family:sans-serif;margin:24px;max-width:1100px}table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}h2{margin-top:32px}.meta{color:#555}"
)


def page(points: pd.DataFrame, title: str = "nightly") -> str:
    """The dashboard of every series in ``points`` (the nightly points table), newest series first."""
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"]
    out.append(f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>")
    if points.empty:
        out.append("<p>No nightly points yet: run <code>python -m harness nightly</code>.</p></body></html>")
        return "".join(out)
    points = points.sort_values("timestamp")
    last = points.iloc[-1]
    out.append(
        f"<p class='meta'>Machine: {html.escape(str(last['host_cpu']))}; device "
        f"{html.escape(str(last['device_name']))}. Reference: <code>{html.escape(str(last['reference']))}</code> "
        f"({html.escape(str(last['reference_versions']))}, pin {html.escape(str(last['reference_pin']))}). "
        f"Latest night {html.escape(str(last['label']))} at {html.escape(str(last['timestamp']))}. Each point: "
        "candidate/reference throughput from pairs of live processes taking turns, with its 95% CI over "
        "pairs; red: a regression alarm, green: an improvement; dashed purple: a change point.</p>"
    )
    order = points.groupby("series", sort=False)["timestamp"].max().sort_values(ascending=False).index
    for key in order:
        nights = points[points["series"] == key]
        head = nights.iloc[-1]
        out.append(f"<h2>{html.escape(str(head['cell_id']))}</h2>")
        out.append(
            f"<p class='meta'>series {html.escape(str(key))}: fingerprint {html.escape(str(head['fingerprint']))}, "
            f"suite {html.escape(str(head['suite_version']))}, reference pin {html.escape(str(head['reference_pin']))}; "
            f"{len(nights)} nights</p>"
        )
        out.append(chart(nights))
        out.append("<table><tr>" + "".join(f"<th>{h}</th>" for _, h in COLUMNS) + "</tr>")
        out.extend(_row_html(r) for _, r in nights.iloc[::-1].iterrows())
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)
