"""harness.gate: the regression gate's statistics on literal and seeded numbers (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.comparisons import gate
from harness.analysis.comparisons.gate import GatePolicy
from harness.formulas.across_runs import ONE, SHIFT, RunFigure, RunSpread, Sums, between, within


def history_spread(history: list[float]) -> RunSpread:
    """A machine whose runs spread as ``history`` does, all of it shared by its configurations
    (the run-wide shift), with no other part."""
    logs, k = np.log(history), len(history)
    nothing = Sums(0.0, 0.0, 1000)
    shift = Sums(float(np.var(logs, ddof=1)) * (k - 1), 0.0, k - 1) if k >= 2 else Sums()
    return RunSpread(((SHIFT, shift), (between(ONE), nothing), (within(ONE), nothing)))


def _judge(
    candidate: list[float], baseline: list[float], compared: int, policy: GatePolicy
) -> gate.SeriesVerdict:
    """The gate on run figures of one process each, under the baseline's own spread."""
    figs = [RunFigure(v) for v in candidate], [RunFigure(v) for v in baseline]
    return gate.judge_series("c", "fp", *figs, compared, policy, history_spread(baseline))


def test_the_gate_takes_its_spread_from_the_variance_model() -> None:
    base = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    quiet = gate.judge_series(
        "c",
        "fp",
        [RunFigure(950.0)],
        [RunFigure(v) for v in base],
        1,
        GatePolicy(min_history=3),
        history_spread(base),
    )
    calibrated = gate.judge_series(
        "c", "fp", [RunFigure(950.0)], [RunFigure(v) for v in base], 1, GatePolicy(min_history=3)
    )
    # the calibration set's runs spread more than this history: its CI is wider
    assert calibrated.ci_high - calibrated.ci_low > quiet.ci_high - quiet.ci_low
    assert quiet.ci_high < 1 < calibrated.ci_high


def test_the_gates_ci_narrows_with_confidence_and_excludes_one_for_a_clear_drop() -> None:
    rng = np.random.default_rng(1)
    base = list(1000 * (1 + 0.02 * rng.standard_normal(20)))
    cand = list(900 * (1 + 0.02 * rng.standard_normal(3)))
    v = _judge(cand, base, 1, GatePolicy())
    assert v.ci_low < v.ratio < v.ci_high < 1 and v.ratio == pytest.approx(0.9, abs=0.03)
    wider = _judge(cand, base, 100, GatePolicy())  # Bonferroni over 100 series
    assert wider.ci_low < v.ci_low and wider.ci_high > v.ci_high


def test_a_bimodal_history_shrinks_less_with_more_runs_than_one_over_sqrt_n() -> None:
    # runs land fast or slow: a median of three is still mostly one mode or the other
    bimodal = [85.0] * 10 + [115.0] * 10
    normal = list(100 + 15 * np.random.default_rng(0).standard_normal(20))
    shrink = {
        name: gate.candidate_scale(h, 3) / gate.candidate_scale(h, 1)
        for name, h in (("bimodal", bimodal), ("normal", normal))
    }
    assert shrink["bimodal"] > 0.9 and shrink["normal"] < 0.8


def test_one_candidate_run_gets_the_baselines_run_to_run_spread() -> None:
    rng = np.random.default_rng(2)
    base = list(1000 * (1 + 0.05 * rng.standard_normal(10)))
    one = _judge([1000.0], base, 1, GatePolicy())
    # one run is one draw: the CI is about as wide as the baseline's run-to-run spread
    assert one.ci_low < one.ratio < one.ci_high and one.ci_high - one.ci_low > 0.1
    three = _judge([1000.0, 990.0, 1010.0], base, 1, GatePolicy())
    assert three.ci_high - three.ci_low < one.ci_high - one.ci_low


def test_robust_z_uses_median_mad_and_a_floor() -> None:
    history = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0]
    # median 100, MAD 1 -> scale 1.4826, one candidate run against 6: sqrt(1 + 1/6)
    assert gate.robust_z(97.0, history) == pytest.approx(-3 / 1.4826 / np.sqrt(7 / 6))
    # three candidate runs: their median (97), against the measured spread of medians of three
    # runs resampled from the history, which is narrower than one run's
    wide = list(100 + 2 * np.random.default_rng(1).standard_normal(30))
    three = gate._z_scale(wide, 3)
    assert three < gate._z_scale(wide, 1)
    assert gate.robust_z([96.0, 97.0, 99.0], wide) == pytest.approx((97 - np.median(wide)) / three)
    # identical history: the floor (0.5% of 100 = 0.5) keeps z finite
    assert gate.robust_z(99.0, [100.0] * 4) == pytest.approx(-2.0 / np.sqrt(1.25))


def _series(
    candidate: float,
    noise: float = 0.01,
    runs: int = 12,
    seed: int = 0,
    policy: GatePolicy = GatePolicy(),
    compared: int = 1,
    candidate_runs: int = 1,
) -> gate.SeriesVerdict:
    rng = np.random.default_rng(seed)
    history = [1000 * (1 + noise * rng.standard_normal()) for _ in range(runs)]
    cand = [candidate * (1 + noise * rng.standard_normal()) for _ in range(candidate_runs)]
    return _judge(cand, history, compared, policy)


def test_judge_flags_a_ten_percent_slowdown_and_speedup() -> None:
    assert _series(900).change == gate.LOWER
    assert _series(1100).change == gate.HIGHER
    assert _series(1000).change in (gate.EQUIVALENT, gate.UNDECIDED)  # never lower or higher


def test_judge_needs_the_minimum_effect_even_when_significant() -> None:
    # a 3% change with very little noise is real but below the 5% minimum effect
    assert _series(970, noise=0.001).change == gate.EQUIVALENT  # its CI inside +-5%
    assert _series(970, noise=0.001, policy=GatePolicy(min_effect=0.02)).change == gate.LOWER


def test_noisy_series_report_a_larger_detectable_effect_that_more_runs_shrink() -> None:
    quiet, noisy = _series(1000, noise=0.01), _series(1000, noise=0.06)
    assert quiet.detectable == pytest.approx(0.05)  # the minimum effect
    assert noisy.detectable > 0.15
    assert _series(1000, noise=0.06, candidate_runs=3).detectable < noisy.detectable
    # a 10% slowdown inside a noise band of sd ~4.4% is not called from one run, but is from five
    history = [940.0, 960, 980, 1000, 1020, 1040, 1060, 950, 1050, 990, 1010, 1000]  # MAD 30
    one = _judge([900.0], history, 1, GatePolicy())
    assert one.change == gate.UNDECIDED and one.z == pytest.approx(-100 / (1.4826 * 30) / np.sqrt(13 / 12))
    five = _judge([890.0, 900, 905, 895, 910], history, 1, GatePolicy())
    assert five.change == gate.LOWER and five.detectable < one.detectable


def test_judge_short_history_and_new_series() -> None:
    short = _series(900, runs=3)
    assert short.change == gate.SHORT_HISTORY and short.history == 3 and short.z is None
    new = _judge([1.0], [], 1, GatePolicy())
    assert new.change == gate.NEW


def test_exit_codes() -> None:
    v = {c: _series(x) for c, x in (("reg", 900), ("same", 1000))}
    assert gate.exit_code([v["same"]]) == gate.EXIT_OK
    assert gate.exit_code([v["same"], v["reg"]]) == gate.EXIT_REGRESSION
    assert gate.exit_code([_series(1000, runs=2)]) == gate.EXIT_SHORT_HISTORY
    assert gate.exit_code([]) == gate.EXIT_SHORT_HISTORY


def test_change_points_find_steps_and_ignore_noise() -> None:
    rng = np.random.default_rng(3)
    flat = 100 * (1 + 0.01 * rng.standard_normal(30))
    assert gate.change_points(flat) == []
    steps = np.concatenate([np.full(10, 100.0), np.full(10, 90.0), np.full(10, 95.0)])
    steps = steps * (1 + 0.005 * rng.standard_normal(30))
    assert gate.change_points(steps) == [10, 20]
    assert gate.change_points([1.0, 2.0]) == []
