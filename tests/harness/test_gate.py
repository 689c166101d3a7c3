"""harness.gate: the regression gate's statistics on literal and seeded numbers (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import gate
from harness.gate import GatePolicy


def test_ratio_ci_brackets_the_ratio_and_narrows_with_confidence() -> None:
    rng = np.random.default_rng(1)
    base = 1000 * (1 + 0.02 * rng.standard_normal(20))
    cand = 900 * (1 + 0.02 * rng.standard_normal(20))
    ratio, lo, hi = gate.ratio_ci(cand, base, 0.95)
    assert lo < ratio < hi and hi < 1 and ratio == pytest.approx(0.9, abs=0.02)
    _, lo99, hi99 = gate.ratio_ci(cand, base, 0.999)
    assert lo99 <= lo and hi99 >= hi


def test_robust_z_uses_median_mad_and_a_floor() -> None:
    history = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0]
    # median 100, MAD 1 -> scale 1.4826
    assert gate.robust_z(97.0, history) == pytest.approx(-3 / 1.4826)
    # identical history: the floor (0.5% of 100 = 0.5) keeps z finite
    assert gate.robust_z(99.0, [100.0] * 5) == pytest.approx(-2.0)


def _series(candidate: float, noise: float = 0.01, runs: int = 8, seed: int = 0,
            policy: GatePolicy = GatePolicy(), compared: int = 1) -> gate.SeriesVerdict:
    rng = np.random.default_rng(seed)
    history = [1000 * (1 + noise * rng.standard_normal()) for _ in range(runs)]
    base_windows = [h * (1 + noise * rng.standard_normal()) for h in history for _ in range(5)]
    cand_windows = [candidate * (1 + noise * rng.standard_normal()) for _ in range(5)]
    return gate.judge_series("c", "fp", cand_windows, float(np.median(cand_windows)), base_windows,
                             history, compared, policy)


def test_judge_flags_a_ten_percent_slowdown_and_speedup() -> None:
    assert _series(900).change == gate.REGRESSION
    assert _series(1100).change == gate.IMPROVEMENT
    assert _series(1000).change == gate.NO_CHANGE


def test_judge_needs_the_minimum_effect_even_when_significant() -> None:
    # a 3% change with very little noise is real but below the 5% minimum effect
    assert _series(970, noise=0.001).change == gate.NO_CHANGE
    assert _series(970, noise=0.001, policy=GatePolicy(min_effect=0.02)).change == gate.REGRESSION


def test_judge_short_history_and_new_series() -> None:
    short = _series(900, runs=3)
    assert short.change == gate.SHORT_HISTORY and short.history == 3 and short.z is None
    new = gate.judge_series("c", "fp", [1.0], 1.0, [], [], 1, GatePolicy())
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
