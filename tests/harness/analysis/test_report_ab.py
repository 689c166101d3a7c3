"""The report's page of an ``ab`` comparison judges each cell's pairs at the min effect it states,
``ab``'s default when the rows do not record the run's --min-effect."""

from __future__ import annotations

import pandas as pd

from harness.analysis import ab, report


def _paired(ratios: list[float]) -> pd.DataFrame:
    rows = []
    for pair, r in enumerate(ratios):
        for side, eps in (("A", 1000.0), ("B", 1000.0 * r)):
            rows.append(
                {"ab_id": "x", "cell_id": "dense/default", "ab_pair": pair, "ab_side": side, "status": "ok"}
                | {"examples_per_sec": eps, "ab_mode": "turns", "tf_version": "2.20.0"}
            )
    return pd.DataFrame(rows)


def test_the_ab_page_judges_at_abs_default_min_effect_and_says_so() -> None:
    page = report.ab_html(_paired([0.96, 0.97, 0.96, 0.97, 0.965]), [], "ab")
    assert report.AB_MIN_EFFECT == ab.Rule().min_effect == 0.02
    assert "min effect 2%)" in page and "record the run's <code>--min-effect</code>" in page
    assert "<td>lower</td>" in page  # 3.5% slower, CI wholly below 0.98


def test_a_larger_min_effect_leaves_the_same_pairs_equivalent() -> None:
    page = report.ab_html(_paired([0.96, 0.97, 0.96, 0.97, 0.965]), [], "ab", min_effect=0.05)
    assert "min effect 5%)" in page and "<td>equivalent</td>" in page


def test_the_rule_asks_no_more_pairs_than_the_rows_hold() -> None:
    assert report.ab_rule(3).min_pairs == 3 and report.ab_rule(12).min_pairs == ab.Rule().min_pairs
    assert ab.decide([0.9, 0.9, 0.9], report.ab_rule(3)).verdict == "lower"
