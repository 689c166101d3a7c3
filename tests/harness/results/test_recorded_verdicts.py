"""The ratio rows of real runs (the default sweep from a clean clone on the 2-core VM, 2026-11-26:
``docs/evidence/2026-11-26-bench*/ratios.parquet``) say no more than their CIs: an
equivalent one lies inside +-5 %, a higher or lower one excludes 1 by at least 5 %, ``decided``
follows the verdict. No TensorFlow, no process."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from harness.formulas.stats import MIN_EFFECT
from harness.formulas.verdicts import DECIDED, EQUIVALENT, HIGHER, LOWER, NOT_MEASURED, UNDECIDED

EVIDENCE = Path(__file__).parents[3] / "docs" / "evidence"
RECORDED = [EVIDENCE / run / "ratios.parquet" for run in ("2026-11-26-bench", "2026-11-26-bench-final")]
BAND = math.log1p(MIN_EFFECT)


@pytest.fixture(scope="module", params=RECORDED, ids=lambda p: p.parent.name)
def ratios(request: pytest.FixtureRequest) -> pd.DataFrame:
    return pd.read_parquet(request.param)


def _unscaled(row: pd.Series) -> tuple[float, float, float]:
    """log(ratio / scale) and its CI's ends: the throughput ratio a verdict judges."""
    return tuple(
        math.log(float(row[k]) / float(row["scale"])) for k in ("ratio", "ratio_ci_low", "ratio_ci_high")
    )  # type: ignore[return-value]


def test_the_recorded_run_uses_the_four_verdicts_only(ratios: pd.DataFrame) -> None:
    assert set(ratios["verdict"]) <= {HIGHER, LOWER, EQUIVALENT, UNDECIDED, NOT_MEASURED}
    assert len(ratios) == 50
    assert list(ratios["decided"]) == [v in DECIDED for v in ratios["verdict"]]


def test_the_recorded_runs_hold_an_equivalent_verdict_to_check() -> None:
    assert sum((pd.read_parquet(p)["verdict"] == EQUIVALENT).sum() for p in RECORDED) >= 1


def test_equivalent_only_where_the_ci_lies_inside_five_percent(ratios: pd.DataFrame) -> None:
    for _, row in ratios[ratios["verdict"] == EQUIVALENT].iterrows():
        _, low, high = _unscaled(row)
        assert low >= -BAND and high <= BAND, row.to_dict()


def test_higher_or_lower_only_where_the_ci_excludes_one_by_the_effect(ratios: pd.DataFrame) -> None:
    for _, row in ratios[ratios["verdict"].isin([HIGHER, LOWER])].iterrows():
        centre, low, high = _unscaled(row)
        assert (low > 0 or high < 0) and abs(centre) >= BAND, row.to_dict()
        assert (centre > 0) == (row["verdict"] == HIGHER)


def test_an_undecided_row_says_what_would_decide_it(ratios: pd.DataFrame) -> None:
    undecided = ratios[ratios["verdict"] == UNDECIDED]
    assert len(undecided)
    for _, row in undecided.iterrows():
        centre, low, high = _unscaled(row)
        held = (low > 0 or high < 0) and abs(centre) >= BAND  # by the false-discovery control
        # (this run's rows gave those 0 more instances; now at least 1: test_ratios)
        assert row["extra_instances"] > 0 or held, row.to_dict()
