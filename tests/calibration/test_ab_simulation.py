"""ab's rule replayed by resampling pairs (:mod:`benchmarks.ab_simulation`)."""

from __future__ import annotations

import math

from benchmarks.ab_simulation import simulate
from harness.analysis.versions import ab
from harness.formulas.verdicts import HIGHER, LOWER

NOISE = [1 + 0.03 * math.sin(1.7 * k) for k in range(40)]
"""A null pool: 40 distinct ratios within 3 % of 1."""


def test_resampled_trials_detect_a_planted_slowdown_and_rarely_call_a_null() -> None:
    default = ab.Rule()
    rates, pairs = simulate([0.95 * r for r in NOISE], default, trials=200, seed=0)
    assert rates[LOWER] > 0.95 and pairs < 30
    rates, _ = simulate(NOISE, default, trials=200, seed=0)
    assert rates[LOWER] + rates[HIGHER] <= 0.01
