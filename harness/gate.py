"""The regression gate's statistics, as pure functions (numpy only).

A **series** is one cell id on one machine fingerprint over runs. The gate compares a candidate run
with baseline runs of every series and calls a change only when three tests agree:

1. **Ratio of medians with a bootstrap CI**: ``r = median(candidate windows) / median(baseline
   windows)`` (window throughputs, baseline runs pooled); the percentile-bootstrap CI (candidate and
   baseline resampled independently) must exclude 1. Its confidence is Bonferroni-corrected over
   the m series compared: ``1 - alpha / m``, so the chance of any false call across the whole matrix
   stays at most ``alpha`` from this test alone.
2. **Minimum effect**: ``|r - 1| >= min_effect`` (default 5%), so a tiny but real change does not fail CI.
3. **Robust z-score against the series' history**: ``z = (c - median(h)) / (1.4826 MAD(h))``, where h are
   the baseline runs' medians and c the candidate's; ``|z| >= z_threshold`` (default 3). It needs at
   least ``min_history`` baseline runs (default 5); the MAD is floored at ``MAD_FLOOR`` of the median,
   so a history of near-identical runs does not turn every wobble into a change.

Test 1 sees window-to-window noise, test 3 run-to-run noise (a new process, a new thread pool); a
regression must stand out from both. Change points in a series' history are found by
:func:`change_points` (binary segmentation with the CUSUM step statistic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness import metrics

MAD_SCALE = 1.4826
"""MAD x 1.4826 estimates the standard deviation of normally distributed values."""
MAD_FLOOR = 0.005
"""The MAD-based scale is at least 0.5% of the history's median."""

REGRESSION, IMPROVEMENT, NO_CHANGE = "regression", "improvement", "no change"
SHORT_HISTORY, NEW = "insufficient history", "new"


@dataclass(frozen=True)
class GatePolicy:
    """How sure the gate must be. Fractions, not percent."""

    min_effect: float = 0.05
    z_threshold: float = 3.0
    min_history: int = 5
    alpha: float = 0.05
    resamples: int = 4000
    seed: int = 0


@dataclass(frozen=True)
class SeriesVerdict:
    """One series' comparison. ``ratio``: candidate / baseline median throughput; ``ci_low``,
    ``ci_high``: its corrected CI; ``z``: robust z of the candidate against the history (None without
    enough history); ``history``: baseline runs of this series; ``change``: one of regression,
    improvement, no change, insufficient history, new."""

    cell_id: str
    fingerprint: str
    candidate: float
    baseline: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    z: float | None
    history: int
    change: str


def ratio_ci(candidate: Sequence[float], baseline: Sequence[float], confidence: float,
             resamples: int = 4000, seed: int = 0) -> tuple[float, float, float]:
    """(ratio of medians, CI low, CI high): percentile bootstrap, each sample resampled on its own."""
    c = np.asarray(candidate, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if len(c) == 0 or len(b) == 0 or np.median(b) <= 0:
        raise ValueError("need non-empty samples and a positive baseline median")
    rng = np.random.default_rng(seed)
    cs = np.median(rng.choice(c, (resamples, len(c))), axis=1)
    bs = np.median(rng.choice(b, (resamples, len(b))), axis=1)
    ratios = cs / bs
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(ratios, [tail, 1 - tail])
    return float(np.median(c) / np.median(b)), float(lo), float(hi)


def robust_z(value: float, history: Sequence[float]) -> float:
    """(value - median) / max(1.4826 MAD, MAD_FLOOR x |median|) of the history."""
    h = np.asarray(history, dtype=float)
    center = float(np.median(h))
    scale = max(MAD_SCALE * float(np.median(np.abs(h - center))), MAD_FLOOR * abs(center))
    return (value - center) / scale if scale > 0 else 0.0


def judge_series(cell_id: str, fingerprint: str, candidate_windows: Sequence[float],
                 candidate_median: float, baseline_windows: Sequence[float],
                 history_medians: Sequence[float], compared: int, policy: GatePolicy
                 ) -> SeriesVerdict:
    """The verdict on one series; ``compared``: series in the family (for Bonferroni)."""
    if not history_medians or not len(baseline_windows):
        return SeriesVerdict(cell_id, fingerprint, candidate_median, None, None, None, None, None,
                             0, NEW)
    confidence = 1 - policy.alpha / max(compared, 1)
    ratio, lo, hi = ratio_ci(candidate_windows, baseline_windows, confidence, policy.resamples,
                             policy.seed)
    base = metrics.median(baseline_windows)
    n = len(history_medians)
    if n < policy.min_history:
        return SeriesVerdict(cell_id, fingerprint, candidate_median, base, ratio, lo, hi, None, n,
                             SHORT_HISTORY)
    z = robust_z(candidate_median, history_medians)
    change = NO_CHANGE
    if hi < 1 and ratio <= 1 - policy.min_effect and z <= -policy.z_threshold:
        change = REGRESSION
    elif lo > 1 and ratio >= 1 + policy.min_effect and z >= policy.z_threshold:
        change = IMPROVEMENT
    return SeriesVerdict(cell_id, fingerprint, candidate_median, base, ratio, lo, hi, z, n, change)


EXIT_OK, EXIT_REGRESSION, EXIT_ERROR, EXIT_SHORT_HISTORY = 0, 1, 2, 3


def exit_code(verdicts: Sequence[SeriesVerdict]) -> int:
    """1 if any series regressed; else 3 if no series had enough history to be judged; else 0."""
    if any(v.change == REGRESSION for v in verdicts):
        return EXIT_REGRESSION
    if not any(v.change in (NO_CHANGE, IMPROVEMENT) for v in verdicts):
        return EXIT_SHORT_HISTORY
    return EXIT_OK


def change_points(values: Sequence[float], min_size: int = 3, threshold: float = 4.0) -> list[int]:
    """Indices where a series steps to a new level, by binary segmentation with the CUSUM step
    statistic: in a segment of n values, the split k (both sides at least ``min_size`` long)
    maximising ``|mean(left) - mean(right)| x sqrt(n_left x n_right / n) / sigma`` is kept when that
    exceeds ``threshold``; then both sides are searched again. ``sigma`` is the noise level, estimated
    robustly from successive differences (1.4826 x MAD(diff) / sqrt 2, which a few steps do not
    inflate), floored at MAD_FLOOR of the series' median. Returns the first index of each new level,
    ascending."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 * min_size:
        return []
    diffs = np.diff(x)
    sigma = max(MAD_SCALE * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2),
                MAD_FLOOR * abs(float(np.median(x))), 1e-12)

    def search(lo: int, hi: int) -> list[int]:
        n = hi - lo
        best, where = 0.0, None
        for k in range(lo + min_size, hi - min_size + 1):
            nl, nr = k - lo, hi - k
            stat = abs(x[lo:k].mean() - x[k:hi].mean()) * np.sqrt(nl * nr / n) / sigma
            if stat > best:
                best, where = stat, k
        if where is None or best < threshold:
            return []
        return [*search(lo, where), where, *search(where, hi)]

    return search(0, len(x))
