"""Calibration of ``ab``'s sequential rule by resampling measured pairs
(``benchmarks/test_ab_calibration.py``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.analysis.versions.ab import Rule, decide
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED


def simulate(pool: Sequence[float], rule: Rule, trials: int, seed: int = 0) -> tuple[dict[str, float], float]:
    """Calibration by resampling: ``trials`` sequential decisions, each drawing pair ratios with
    replacement from ``pool`` (measured pairs) until decided or max_pairs. Returns the fraction
    of trials per verdict and the mean pairs used."""
    rng = np.random.default_rng(seed)
    counts = {LOWER: 0, HIGHER: 0, EQUIVALENT: 0, UNDECIDED: 0}
    used = 0
    for _ in range(trials):
        ratios: list[float] = []
        d = decide(ratios, rule)
        while d.verdict == UNDECIDED and len(ratios) < rule.max_pairs:
            ratios.append(float(pool[int(rng.integers(len(pool)))]))
            d = decide(ratios, rule)
        counts[d.verdict] += 1
        used += d.pairs
    return {k: v / trials for k, v in counts.items()}, used / trials
