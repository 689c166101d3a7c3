"""The report's page of an ``ab`` comparison judges each cell's pairs with the rule its run used,
as its rows record it (``ab_min_effect``, ``ab_min_pairs``), and says where rows predate that."""

from __future__ import annotations

import pandas as pd

from harness.analysis.pages import report
from harness.analysis.versions import ab

SLOWER = [0.96, 0.97, 0.96, 0.97, 0.965]  # 3.5% slower, CI wholly below 0.98


def _paired(
    ratios: list[float], min_effect: float | None = None, min_pairs: int | None = None
) -> pd.DataFrame:
    rows = []
    for pair, r in enumerate(ratios):
        for side, eps in (("A", 1000.0), ("B", 1000.0 * r)):
            rows.append(
                {"ab_id": "x", "cell_id": "dense/default", "ab_pair": pair, "ab_side": side, "status": "ok"}
                | {"examples_per_sec": eps, "ab_mode": "turns", "tf_version": "2.20.0"}
                | {"ab_min_effect": min_effect, "ab_min_pairs": min_pairs}
            )
    return pd.DataFrame(rows)


def test_the_page_judges_with_the_min_effect_the_run_recorded() -> None:
    page = report.ab_html(_paired(SLOWER, 0.02, 5), [], "ab")
    assert "<td>2%</td><td>lower</td>" in page and "ab</code>'s default" not in page
    page = report.ab_html(_paired(SLOWER, 0.05, 5), [], "ab")
    assert "<td>5%</td><td>equivalent</td>" in page


def test_the_rule_asks_no_more_pairs_than_the_rows_hold() -> None:
    rows = _paired([0.9] * 3, 0.02, 5)
    rule = report.ab_rule(rows, 3)
    assert rule.min_pairs == 3 and ab.decide([0.9] * 3, rule).verdict == "lower"
    assert report.ab_rule(_paired([0.9] * 12, 0.02, 8), 12).min_pairs == 8
