"""The hierarchical bootstrap the coverage benchmark compares with (:mod:`benchmarks.bootstrap`)."""

from __future__ import annotations

import math

from benchmarks.bootstrap import hierarchical_bootstrap_ci


def test_hierarchical_bootstrap_stays_inside_the_process_range() -> None:
    lo, hi = hierarchical_bootstrap_ci([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], resamples=500)
    assert 1.0 <= lo <= 2.0 <= hi <= 3.0


def test_bootstrap_of_one_process_is_the_percentile_bootstrap_of_its_median() -> None:
    assert hierarchical_bootstrap_ci([[7.5] * 5], resamples=500) == (7.5, 7.5)
    assert hierarchical_bootstrap_ci([[3.0]], resamples=500) == (3.0, 3.0)
    lo, hi = hierarchical_bootstrap_ci([[10, 11, 12, 13, 14]], resamples=2000)
    assert 10 <= lo < 12 < hi <= 14  # spread values give a non-degenerate interval about the median


def test_bootstrap_is_deterministic_for_a_seed_and_nested_by_confidence() -> None:
    values = [[101.0, 97.5, 99.0, 104.2, 100.3, 98.8]]
    once = hierarchical_bootstrap_ci(values, resamples=500, seed=3)
    assert once == hierarchical_bootstrap_ci(values, resamples=500, seed=3)
    lo95, hi95 = hierarchical_bootstrap_ci(values, confidence=0.95, resamples=500)
    lo50, hi50 = hierarchical_bootstrap_ci(values, confidence=0.5, resamples=500)
    assert lo95 <= lo50 <= hi50 <= hi95


def test_bootstrap_of_nothing_is_nan() -> None:
    assert all(math.isnan(v) for v in hierarchical_bootstrap_ci([]))
    assert all(math.isnan(v) for v in hierarchical_bootstrap_ci([[], []]))
