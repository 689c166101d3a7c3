"""Where a series changes level: the best split in two, and two ways to decide it is real. Pure: numpy.

A split of n values before index k (both sides at least ``min_side``) has the statistic
|mean(x[k:]) - mean(x[:k])| / (s x sqrt(1 / k + 1 / (n - k))), s a known ``sigma`` (CUSUM) or the
pooled sd of both sides (two-sample t, n - 2 df); the best split has the largest
(:func:`best_splits`). :func:`segments`: the gate's change points; :func:`permutation_p`: nightly's
rule (b) (both: docs/explanation/statistics.md)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

Values = npt.NDArray[np.float64]


def best_splits(x: Values, min_side: int, sigma: float | None = None) -> tuple[Values, npt.NDArray[np.int_]]:
    """For each row of ``x`` (series x values, at least 2 x ``min_side`` values): the largest
    statistic of the module doc over its splits, and the split (values before it) that gives it;
    ``sigma`` the known noise level (None: each split's pooled standard deviation)."""
    n = x.shape[1]
    splits = np.arange(min_side, n - min_side + 1)
    cs = np.cumsum(x, axis=1)
    s1 = cs[:, splits - 1]
    n1, n2 = splits.astype(float), (n - splits).astype(float)
    m1, m2 = s1 / n1, (cs[:, -1:] - s1) / n2
    if sigma is None:
        cs2 = np.cumsum(x * x, axis=1)
        q1 = cs2[:, splits - 1]
        ss = (q1 - n1 * m1**2) + (cs2[:, -1:] - q1 - n2 * m2**2)
        scale = np.sqrt(np.maximum(ss, 0.0) / (n - 2))
    else:
        scale = np.full_like(m1, sigma)
    t = np.abs(m2 - m1) / np.maximum(scale * np.sqrt(1 / n1 + 1 / n2), 1e-12)
    best = np.argmax(t, axis=1)
    return t[np.arange(x.shape[0]), best], splits[best]


def segments(x: Values, min_side: int, threshold: float, sigma: float) -> list[int]:
    """Binary segmentation (see the module doc): the first index of each new level, ascending."""

    def search(lo: int, hi: int) -> list[int]:
        if hi - lo < 2 * min_side:
            return []
        stat, split = best_splits(x[None, lo:hi], min_side, sigma)
        if not stat[0] > 0 or stat[0] < threshold:
            return []
        at = lo + int(split[0])
        return [*search(lo, at), at, *search(at, hi)]

    return search(0, len(x))


def permutation_p(
    x: Values, observed: float, min_side: int, alpha: float, permutations: int, batch: int
) -> float:
    """The permutation p-value of ``observed`` (the best split's t of ``x``) over ``permutations``
    shuffles drawn in batches of ``batch``, seeded by the series' length (a replay decides the
    same), stopping early as the module doc says."""
    rng = np.random.default_rng(x.size)
    above = drawn = 0
    # p = (1 + above) / (1 + permutations) > alpha once above >= floor(alpha (1 + permutations))
    limit = math.floor(alpha * (1 + permutations) + 1e-9) - 1
    while drawn < permutations:
        k = min(batch, permutations - drawn)
        null, _ = best_splits(rng.permuted(np.broadcast_to(x, (k, x.size)), axis=1), min_side)
        above += int(np.sum(null >= observed - 1e-12))
        drawn += k
        if above > limit:
            break
    return (1 + above) / (1 + drawn)
