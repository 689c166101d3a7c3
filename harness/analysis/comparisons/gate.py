"""The regression gate's statistics, as pure functions (numpy and the standard library): the three
tests a series' change must pass, and its change points, as docs/explanation/statistics.md
("compare") states them; one observation per run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from harness.errors import EXIT_FAILURE, EXIT_OK, EXIT_SHORT_HISTORY, require
from harness.formulas import across_runs, metrics
from harness.formulas.across_runs import RunFigure, RunSpread, Side
from harness.formulas.change_points import segments
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED, equivalent

MAD_SCALE = 1.4826
"""MAD x 1.4826 estimates the standard deviation of normally distributed values."""

MAD_FLOOR = 0.005
"""The MAD-based scale is at least 0.5% of the history's median."""


SHORT_HISTORY, NEW = "insufficient history", "new"


@dataclass(frozen=True)
class GatePolicy:
    """How sure the gate must be. Fractions, not percent."""

    min_effect: float = 0.05
    z_threshold: float = 3.5
    min_history: int = 10
    alpha: float = 0.05
    power: float = 0.95
    """The detection probability the reported detectable effect is computed for."""

    def __post_init__(self) -> None:
        require(
            {
                "--min-effect": (self.min_effect, 0 <= self.min_effect < 1, "a fraction in [0, 1)"),
                "--z": (self.z_threshold, self.z_threshold > 0, "a number > 0"),
                "--min-history": (self.min_history, self.min_history >= 1, "an integer >= 1"),
                "--false-alarm": (self.alpha, 0 < self.alpha < 1, "a fraction in (0, 1)"),
                "power": (self.power, 0 < self.power < 1, "a fraction in (0, 1)"),
            }
        )


@dataclass(frozen=True)
class SeriesVerdict:
    """One series' comparison. ``ratio``: candidate / baseline median throughput; ``ci_low``,
    ``ci_high``: its corrected CI; ``z``: robust z of the candidate against the history (None without
    enough history); ``history``: baseline runs of this series; ``change``: a verdict
    (:mod:`harness.formulas.verdicts`: lower, a regression; higher; equivalent; undecided), or
    insufficient history, or new."""

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
    runs: int = 1
    """Candidate runs of this series."""
    detectable: float | None = None
    """Smallest relative change (fraction) the gate catches with ``policy.power`` probability."""
    machine: str = ""
    """The machine's name (:mod:`harness.analysis.comparisons.machines`)."""


def robust_scale(history: Sequence[float]) -> float:
    """max(1.4826 MAD, MAD_FLOOR x |median|) of the history: its robust standard deviation."""
    h = np.asarray(history, dtype=float)
    center = float(np.median(h))
    return max(MAD_SCALE * float(np.median(np.abs(h - center))), MAD_FLOOR * abs(center))


def candidate_scale(
    history: Sequence[float], candidate_runs: int, resamples: int = 4000, seed: int = 0
) -> float:
    """Robust spread of the median of ``candidate_runs`` runs drawn from the history: the larger of
    the robust scale of the medians of resampled draws and the history's robust scale times
    IQR(draws) / IQR(history) (at most the history's scale; the MAD alone collapses on a history
    of two tight clusters). It shrinks as the run-to-run noise allows: about 1.25/sqrt(n) for
    normal noise, hardly at all for a bimodal history (runs that land fast or slow), where a median
    of three is still one mode."""
    s = robust_scale(history)
    if candidate_runs <= 1:
        return s
    h = np.asarray(history, dtype=float)
    draws = np.median(np.random.default_rng(seed).choice(h, (resamples, candidate_runs)), axis=1)
    iqr_h = float(np.subtract(*np.quantile(h, [0.75, 0.25])))
    iqr_d = float(np.subtract(*np.quantile(draws, [0.75, 0.25])))
    by_iqr = s if iqr_h <= 0 else s * min(1.0, iqr_d / iqr_h)
    return max(robust_scale(draws), by_iqr)


def robust_z(
    candidate: float | Sequence[float], history: Sequence[float], scale: float | None = None
) -> float:
    """(median(candidate) - median(history)) / sqrt(s_c^2 + s_h^2 / n_h): s_h the history's robust
    scale, s_c :func:`candidate_scale` for the candidate's run count (``scale``: that denominator,
    when already known). A single value is one run."""
    c = np.atleast_1d(np.asarray(candidate, dtype=float))
    scale = _z_scale(history, len(c)) if scale is None else scale
    diff = float(np.median(c)) - float(np.median(history))
    return diff / scale if scale > 0 else 0.0


def _z_scale(history: Sequence[float], candidate_runs: int) -> float:
    return float(
        np.hypot(candidate_scale(history, candidate_runs), robust_scale(history) / np.sqrt(len(history)))
    )


def detectable_effect(
    history: Sequence[float], candidate_runs: int, policy: GatePolicy, scale: float | None = None
) -> float:
    """Smallest relative change (fraction of the history's median) that the z-test flags with
    probability ``policy.power``, given the history's spread (``scale``: the z-score's
    denominator, when already known); at least ``policy.min_effect``."""
    z = policy.z_threshold + NormalDist().inv_cdf(policy.power)
    scale = _z_scale(history, candidate_runs) if scale is None else scale
    return max(policy.min_effect, float(z * scale / abs(float(np.median(history)))))


def judge_series(
    cell_id: str,
    fingerprint: str,
    candidate: Sequence[RunFigure],
    baseline: Sequence[RunFigure],
    compared: int,
    policy: GatePolicy,
    spread: RunSpread = across_runs.CALIBRATION,
    kind: str = across_runs.ONE,
) -> SeriesVerdict:
    """The verdict on one series. ``candidate`` and ``baseline``: one figure per run (its median
    examples/s and its processes'); ``compared``: series in the family (for Bonferroni);
    ``spread``: the variance model across runs (the calibration set pooled with the machine's
    history), whose ``kind`` of configuration the series is."""
    center = float(np.median([r.value for r in candidate]))
    if not baseline:
        return SeriesVerdict(
            cell_id, fingerprint, center, None, None, None, None, None, 0, NEW, len(candidate)
        )
    confidence = 1 - policy.alpha / max(compared, 1)
    r = across_runs.ratio(_side(candidate, spread, kind), _side(baseline, spread, kind), confidence)
    candidate_v, baseline_v = [x.value for x in candidate], [x.value for x in baseline]
    ratio, lo, hi = r.value, r.low, r.high
    base = metrics.median(baseline_v)
    n = len(baseline_v)
    if n < policy.min_history:
        return SeriesVerdict(
            cell_id, fingerprint, center, base, ratio, lo, hi, None, n, SHORT_HISTORY, len(candidate)
        )
    scale = _z_scale(baseline_v, len(candidate))  # resampled: computed once for z and detectable
    z = robust_z(candidate_v, baseline_v, scale)
    change = EQUIVALENT if equivalent(lo, hi, policy.min_effect) else UNDECIDED
    if hi < 1 and ratio <= 1 - policy.min_effect and z <= -policy.z_threshold:
        change = LOWER
    elif lo > 1 and ratio >= 1 + policy.min_effect and z >= policy.z_threshold:
        change = HIGHER
    detectable = detectable_effect(baseline_v, len(candidate), policy, scale)
    return SeriesVerdict(
        cell_id, fingerprint, center, base, ratio, lo, hi, z, n, change, len(candidate), detectable
    )


def _side(runs: Sequence[RunFigure], spread: RunSpread, kind: str) -> Side:
    """The runs' side under the variance model; its figure their median (the gate's figure)."""
    return replace(across_runs.side(runs, spread, kind), value=float(np.median([r.value for r in runs])))


EXIT_REGRESSION = EXIT_FAILURE


def exit_code(verdicts: Sequence[SeriesVerdict]) -> int:
    """1 if any series regressed; else 3 if no series had enough history to be judged; else 0."""
    if any(v.change == LOWER for v in verdicts):
        return EXIT_REGRESSION
    if not any(v.change in (EQUIVALENT, UNDECIDED, HIGHER) for v in verdicts):
        return EXIT_SHORT_HISTORY
    return EXIT_OK


def change_points(values: Sequence[float], min_size: int = 3, threshold: float = 4.0) -> list[int]:
    """Indices where a series steps to a new level (the first index of each, ascending): binary
    segmentation with the CUSUM step statistic (:func:`harness.formulas.change_points.segments`),
    both sides at least ``min_size`` long, a split kept above ``threshold``. ``sigma``, the noise
    level, is estimated robustly from successive differences (1.4826 x MAD(diff) / sqrt 2, which a
    few steps do not inflate), floored at MAD_FLOOR of the series' median."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 * min_size:
        return []
    diffs = np.diff(x)
    sigma = max(
        MAD_SCALE * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2),
        MAD_FLOOR * abs(float(np.median(x))),
        1e-12,
    )
    return segments(x, min_size, threshold, sigma)
