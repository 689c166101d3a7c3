"""The pure statistics of harness.formulas.stats on literal numbers (worked by hand in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.formulas import stats
from harness.formulas.verdicts import judge

T_2 = 4.302653  # t(0.975, 2)
T_3 = 3.182446  # t(0.975, 3)


def test_t_quantiles_are_students() -> None:
    assert stats.t_quantile(2) == pytest.approx(T_2, rel=1e-6)
    assert stats.t_quantile(3) == pytest.approx(T_3, rel=1e-6)


def test_figure_is_the_median_with_a_log_scale_t_interval() -> None:
    # logs 4.60517, 4.49981, 4.78749: mean 4.63082, sd 0.145547; half = 4.302653 x 0.145547 / sqrt 3
    # = 0.361560 -> exp(4.26926) = 71.469, exp(4.99238) = 147.287
    est = stats.figure([100.0, 90.0, 120.0])
    assert (est.value, est.n) == (100.0, 3)
    assert est.low == pytest.approx(71.469, rel=1e-4)
    assert est.high == pytest.approx(147.287, rel=1e-4)


def test_figure_of_equal_processes_has_a_zero_width_interval() -> None:
    est = stats.figure([50.0, 50.0, 50.0])
    assert (est.low, est.value, est.high) == pytest.approx((50.0, 50.0, 50.0))


def test_one_process_gives_a_figure_without_a_ci() -> None:
    est = stats.figure([80.0])
    assert est.value == 80.0 and math.isnan(est.low) and math.isnan(est.high) and est.n == 1


def test_figure_refuses_non_positive_values() -> None:
    with pytest.raises(ValueError, match="> 0"):
        stats.figure([10.0, 0.0])


def test_cv_by_hand() -> None:
    # [1, 2, 3]: mean 2, squared deviations 1 + 0 + 1 = 2, sample variance 2 / (3 - 1) = 1, std 1
    assert stats.cv([1, 2, 3]) == 0.5
    # [2, 4, 4, 4, 5, 5, 7, 9]: mean 5, sum of squared deviations 32, sample variance 32/7
    assert stats.cv([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7) / 5, rel=1e-15)
    assert stats.cv([5.0, 5.0, 5.0]) == 0.0


def test_cv_needs_two_values() -> None:
    assert math.isnan(stats.cv([1.0]))
    assert math.isnan(stats.cv([]))


def test_welch_degrees_of_freedom() -> None:
    # (1/3 + 4/5)^2 / ((1/3)^2 / 2 + (4/5)^2 / 4) = 1.284444 / 0.215556
    assert stats.welch_df(1.0, 3, 4.0, 5) == pytest.approx(5.958763, rel=1e-6)
    assert stats.welch_df(0.0, 3, 0.0, 3) == math.inf


def test_ratio_of_medians_with_a_welch_interval() -> None:
    r = stats.ratio([140.0, 150.0, 160.0], [95.0, 100.0, 105.0])
    assert r.value == pytest.approx(1.5)
    assert (r.low, r.high) == pytest.approx((1.305759, 1.720896), rel=1e-5)
    assert (r.n_a, r.n_b) == (3, 3)


def test_ratio_with_one_value_on_a_side_has_no_ci() -> None:
    r = stats.ratio([140.0], [95.0, 100.0, 105.0])
    assert r.value == pytest.approx(1.4) and math.isnan(r.low)
    assert judge(r.value, r.low, r.high, stats.MIN_EFFECT) == "undecided"


@pytest.mark.parametrize(
    "ratio, verdict",
    [
        (stats.Ratio(1.20, 1.10, 1.30, 3, 3), "higher"),
        (stats.Ratio(0.80, 0.70, 0.90, 3, 3), "lower"),
        (stats.Ratio(1.20, 0.95, 1.50, 3, 3), "undecided"),  # CI reaches 1 and past 1.05
        (stats.Ratio(1.03, 1.01, 1.045, 3, 3), "equivalent"),  # CI inside [1/1.05, 1.05]
        (stats.Ratio(1.03, 1.01, 1.06, 3, 3), "undecided"),  # below MIN_EFFECT, CI past 1.05
    ],
)
def test_verdicts(ratio: stats.Ratio, verdict: str) -> None:
    assert judge(ratio.value, ratio.low, ratio.high, stats.MIN_EFFECT) == verdict


def test_scaled_ratio_scales_every_end() -> None:
    r = stats.Ratio(1.8, 1.6, 2.0, 3, 3).scaled(0.5)
    assert (r.value, r.low, r.high) == pytest.approx((0.9, 0.8, 1.0))


def test_without_enough_history_the_ci_covers_the_processes_only() -> None:
    for earlier in ([], [100.0]):
        est, used = stats.figure_with_history([100.0, 90.0, 120.0], earlier)
        assert used == 0 and est == stats.figure([100.0, 90.0, 120.0])


def test_history_widens_the_ci_to_the_spread_of_run_figures() -> None:
    # centre = exp(mean log [100, 90, 120]) = 102.5986; run logs log 60, log 150, 4.63082:
    # sd 0.458737 (ddof 1), half = 4.302653 x 0.458737 = 1.97378 -> [14.154, 743.71]
    est, used = stats.figure_with_history([100.0, 90.0, 120.0], [60.0, 150.0])
    assert used == 2 and est.value == 100.0
    assert (est.low, est.high) == pytest.approx((14.154, 743.71), rel=1e-4)


def test_quiet_history_never_narrows_the_process_ci() -> None:
    est, used = stats.figure_with_history([100.0, 90.0, 120.0], [99.0, 101.0, 100.0])
    assert used == 3
    assert (est.low, est.high) == pytest.approx((71.469, 147.287), rel=1e-4)


def test_history_keeps_only_the_newest_runs() -> None:
    old_and_new = [1.0] * 5 + [100.0] * stats.HISTORY_RUNS
    est, used = stats.figure_with_history([100.0, 100.0, 100.0], old_and_new)
    assert used == stats.HISTORY_RUNS and est.low == pytest.approx(100.0)


def _reference_interval(logs: list[float], confidence: float) -> tuple[float, float, float]:
    """The log-scale t interval as figure, turn_ratio and ab's decide each computed it before
    they shared :func:`stats.log_t_interval`."""
    centre = float(np.mean(logs))
    half = stats.t_quantile(len(logs) - 1, confidence) * float(np.std(logs, ddof=1)) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


@pytest.mark.parametrize("n", [2, 3, 7, 30])
@pytest.mark.parametrize("confidence", [0.95, 0.99])
def test_one_log_t_interval_serves_figures_turns_and_ab_bit_for_bit(n: int, confidence: float) -> None:
    from harness.analysis.versions import ab
    from harness.formulas import turns

    values = np.exp(np.random.default_rng(n).normal(4.0, 0.1, n)).tolist()
    logs = np.log(values).tolist()
    ref = _reference_interval(logs, confidence)
    assert stats.log_t_interval(logs, confidence) == ref
    half = stats.t_quantile(n - 1, confidence) * float(np.std(logs, ddof=1)) / math.sqrt(n)
    assert stats.log_t_half_width(logs, confidence) == half
    est = stats.figure(values, confidence)
    assert (est.low, est.high) == ref[1:]
    r = turns.turn_ratio(logs, scale=0.5, confidence=confidence)
    assert (r.value, r.low, r.high) == (ref[0] * 0.5, ref[1] * 0.5, ref[2] * 0.5)
    d = ab.decide(values, ab.Rule(confidence=confidence, min_pairs=2))
    assert (d.ratio, d.low, d.high) == ref


def test_the_log_t_interval_below_two_values() -> None:
    assert all(math.isnan(v) for v in stats.log_t_interval([]))
    value, low, high = stats.log_t_interval([math.log(2.0)])
    assert value == pytest.approx(2.0) and math.isnan(low) and math.isnan(high)
    assert stats.log_t_half_width([0.1]) == math.inf
