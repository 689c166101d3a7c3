"""``nightly``'s dashboard: one static HTML page per results folder (no script, no network: it opens
from disk). Per series, newest first: a chart of the candidate/reference ratio with its 95% CIs
(:func:`harness.analysis.versions.ratio_figure.nightly`, embedded as PNG), alarm nights marked and change
points drawn; a table of every night with its label, both builds' versions and both decisions. The
page names the machine and the reference build."""

from __future__ import annotations

import pandas as pd

from harness.analysis.run import render
from harness.analysis.versions import ratio_figure
from harness.analysis.versions.nightly_text import change_point_words, num
from harness.contract.columns import unflatten_all
from harness.contract.records import NightlyRow, Status

COLUMNS: tuple[str, ...] = ("night", "when (UTC)", "cand/ref", "95% CI", "pairs", "vs baseline", "rule (a)")
COLUMNS += ("rule (b)", "candidate", "reference")


def _cells(r: NightlyRow) -> list[object]:
    """One night's row of the table, in :data:`COLUMNS`' order."""
    return [
        r.label,
        r.timestamp[:16].replace("T", " "),
        num(r.ratio.value),
        f"{num(r.ratio.low)}..{num(r.ratio.high)}",
        r.pairs,
        num(r.change.value),
        r.verdict if r.status == Status.OK else f"{r.status}: {r.reason}",
        change_point_words(r.change_point, ", confirms (a)", ""),
        r.candidate_versions,
        r.reference_versions,
    ]


def page(points: pd.DataFrame, title: str = "nightly") -> str:
    """The dashboard of every series in ``points`` (the nightly points table), newest series first:
    each its key, newest night, count of nights, chart and rows (a night's colour-bearing alarm or
    None, and its cells)."""
    if points.empty:
        return render.page("nightly.html", title=title, last=None, series=[], columns=COLUMNS)
    points = points.sort_values("timestamp")
    order = points.groupby("series", sort=False)["timestamp"].max().sort_values(ascending=False).index
    series = []
    for key in order:
        nights = points[points["series"] == key]
        typed = unflatten_all(NightlyRow, nights.to_dict("records"))
        rows = [(ratio_figure.alarm_of(r.alarm), _cells(r)) for r in reversed(typed)]
        chart = ratio_figure.png_base64(ratio_figure.nightly(nights))
        series.append((key, typed[-1], len(typed), chart, rows))
    # the newest series' newest night is the newest of all
    return render.page("nightly.html", title=title, last=series[0][1], series=series, columns=COLUMNS)
