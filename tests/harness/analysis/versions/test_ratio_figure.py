"""The one ratio-over-time figure: a nightly series and a bisect's steps as its points and lines."""

from __future__ import annotations

import base64
import datetime as dt
import math
from pathlib import Path

import pandas as pd

from harness.analysis.versions import ab, ratio_figure
from harness.analysis.versions import bisect as bs
from harness.contract.wheels import Wheel
from harness.formulas.verdicts import LOWER


def _nights() -> pd.DataFrame:
    days = [dt.datetime(2026, 11, d, 3, tzinfo=dt.UTC) for d in range(1, 7)]
    return pd.DataFrame(
        {
            "label": [f"n{i}" for i in range(1, 7)],
            "timestamp": [d.isoformat() for d in days],
            "status": ["ok"] * 5 + ["failed"],
            "ratio": [1.0, 1.0, 1.0, 0.95, 0.95, None],
            "ratio_ci_low": [0.99, 0.99, None, 0.94, 0.94, None],
            "ratio_ci_high": [1.01, 1.01, None, 0.96, 0.96, None],
            "alarm": [None, None, None, "regression", None, None],
            "change_point": [None, None, None, None, "n4", None],
        }
    )


def test_a_nightly_series_is_its_measured_nights_by_time_with_alarms_and_change_points() -> None:
    chart = ratio_figure.nightly(_nights())
    assert [p.note for p in chart.points] == ["n1", "n2", "n3", "n4", "n5"]  # the failed night has no point
    assert math.isnan(chart.points[2].low)  # no CI: a bare point
    assert chart.points[3].style[0] == ratio_figure.ALARM_COLOUR["regression"]
    assert {p.kind for p in chart.points} == {"no alarm", "regression alarm"}
    (cp,) = chart.moments
    assert cp.at == dt.datetime(2026, 11, 3, 15, tzinfo=dt.UTC) and cp.label == "change point before n4"
    png = ratio_figure.png_base64(chart)
    assert png is not None and base64.b64decode(png).startswith(b"\x89PNG")
    assert ratio_figure.png_base64(ratio_figure.nightly(_nights().iloc[5:])) is None


def test_a_bisect_draws_each_build_against_the_good_one_by_date(tmp_path: Path) -> None:
    builds = (
        Wheel("tensorflow-cpu", "2.20.0", "2025-08-13"),
        Wheel("tf-nightly-cpu", "2.21.0.dev20251001", "2025-10-01"),
        Wheel("tensorflow-cpu", "2.21.0", "2026-03-06"),
    )
    slow = ab.Decision(0.8, 0.78, 0.82, 5, LOWER)
    steps = (
        bs.StepResult(bs.Step(bs.Kind.ENDPOINTS, 0, 2), slow),
        bs.StepResult(bs.Step(bs.Kind.MIDPOINT, 0, 1), ab.Decision(0.81, 0.79, 0.83, 5, bs.SLOW)),
    )
    chart = ratio_figure.bisect(bs.State(builds, {}, steps), None)
    assert [p.note for p in chart.points] == ["2.21.0", "2.21.0.dev20251001"]
    assert [h.at for h in chart.levels] == [1.0, bs.halfway(0.8)]
    assert {p.kind for p in chart.points} == {"slow: like the bad build"}  # the endpoints' lower too
    paths = ratio_figure.draw(chart, tmp_path, ratio_figure.BISECT)
    assert [p.name for p in paths] == ["ratio-by-date.png", "ratio-by-date.svg"]
