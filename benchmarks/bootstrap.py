"""The hierarchical bootstrap that ``benchmarks/test_coverage.py`` compares the row CI with.

Processes resampled, then windows inside each. With 3 processes its percentile interval is about
[min, max] of the process figures, which covers the median of a process distribution only 75 % of
the time (1 - 2 / 2**3); over one process's windows it is the percentile bootstrap of their median.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.formulas.stats import CONFIDENCE, NAN


def hierarchical_bootstrap_ci(
    windows_by_process: Sequence[Sequence[float]],
    confidence: float = CONFIDENCE,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of the median of per-process medians, resampling processes with replacement
    and then windows inside each chosen process."""
    groups = [np.asarray(w, dtype=float) for w in windows_by_process if len(w)]
    if not groups:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    for r in range(resamples):
        chosen = rng.integers(0, len(groups), size=len(groups))
        stats[r] = np.median(
            [np.median(groups[i][rng.integers(0, groups[i].size, groups[i].size)]) for i in chosen]
        )
    lo, hi = np.quantile(stats, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)
