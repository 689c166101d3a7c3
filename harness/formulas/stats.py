"""Inference over independent processes: a figure's CI, a ratio's CI, and when a difference counts.

The unit of evidence is the process (docs/explanation/statistics.md): each gives one figure (the
median of its windows); everything here works on per-process (or, across runs, per-run) figures.
Pure; numpy and scipy.stats only. The formulas, with their units: results/README.md; the verdicts:
:mod:`harness.formulas.verdicts` (m = MIN_EFFECT)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from harness.spec.protocol import DEFAULT_MIN_EFFECT

CONFIDENCE = 0.95

MIN_EFFECT = DEFAULT_MIN_EFFECT
"""Smallest relative difference reported as one (5 %): a ratio within [1/1.05, 1.05] is never
higher or lower, even when its CI excludes 1; a CI inside that band is "equivalent"."""

NAN = float("nan")

MIN_HISTORY_RUNS = 2
"""Earlier runs (same cell, same fingerprint) a row's CI needs before it also covers run-to-run
drift: with this run, 3 run figures (2 degrees of freedom)."""

HISTORY_RUNS = 10
"""At most this many of the newest earlier runs widen a CI (older ones may predate a change)."""

Logs = Sequence[float] | npt.NDArray[np.float64]
"""Log figures or log ratios (natural logarithms)."""


@dataclass(frozen=True)
class Interval:
    """A figure and its CI (same unit as the values), from ``n`` independent values."""

    value: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Ratio:
    """a / b with its CI; ``n_a``, ``n_b``: independent values behind each side."""

    value: float
    low: float
    high: float
    n_a: int
    n_b: int

    def scaled(self, factor: float) -> Ratio:
        """The ratio times a constant (e.g. 1/devices for scaling efficiency)."""
        return Ratio(self.value * factor, self.low * factor, self.high * factor, self.n_a, self.n_b)


def _positive(values: Sequence[float | None]) -> npt.NDArray[np.float64]:
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if (x <= 0).any():
        raise ValueError(f"figures must be > 0 for a log-scale interval; received {x.tolist()}")
    return x


def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t quantile t((1 + confidence) / 2, df)."""
    return float(sps.t.ppf((1 + confidence) / 2, df))


def log_t_half_width(logs: Logs, confidence: float = CONFIDENCE) -> float:
    """The log-scale Student-t CI's half-width, t(conf, n-1) * sd(logs) / sqrt(n) (ddof 1);
    +inf below 2 values."""
    n = len(logs)
    if n < 2:
        return math.inf
    return t_quantile(n - 1, confidence) * float(np.std(logs, ddof=1)) / math.sqrt(n)


def log_t_interval(logs: Logs, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The ratio behind log ratios (or the figure behind log figures): exp(mean(logs)) and its CI
    exp(mean(logs) +- :func:`log_t_half_width`); NaN ends below 2 values, all NaN with none."""
    if len(logs) == 0:
        return NAN, NAN, NAN
    centre = float(np.mean(logs))
    if len(logs) < 2:
        return math.exp(centre), NAN, NAN
    half = log_t_half_width(logs, confidence)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def figure(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Median of per-process figures, with the log-scale Student-t CI (see the module doc)."""
    x = _positive(values)
    if x.size == 0:
        return Interval(NAN, NAN, NAN, 0)
    _, low, high = log_t_interval(np.log(x), confidence)
    return Interval(float(np.median(x)), low, high, int(x.size))


def figure_with_history(
    values: Sequence[float], earlier: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[Interval, int]:
    """:func:`figure` of this run's process figures, its CI widened to the spread of run figures
    when ``earlier`` (figures of earlier runs, newest last) holds at least MIN_HISTORY_RUNS;
    returns the estimate and the earlier runs used (0: the CI covers this run's processes only)."""
    est = figure(values, confidence)
    past = _positive(earlier)[-HISTORY_RUNS:]
    if past.size < MIN_HISTORY_RUNS or est.n == 0:
        return est, 0
    logs = np.log(_positive(values))
    centre = float(np.mean(logs))
    runs = np.append(np.log(past), centre)
    half = t_quantile(runs.size - 1, confidence) * float(np.std(runs, ddof=1))
    if est.n >= 2:
        half = max(half, centre - math.log(est.low))
    return Interval(est.value, math.exp(centre - half), math.exp(centre + half), est.n), int(past.size)


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two means (variances of the
    samples, ddof 1). With both variances 0 the difference is exact: +inf."""
    sa, sb = var_a / n_a, var_b / n_b
    if sa + sb == 0:
        return math.inf
    return (sa + sb) ** 2 / (sa**2 / (n_a - 1) + sb**2 / (n_b - 1))


def ratio(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> Ratio:
    """median(a) / median(b), CI by Welch's t on the logs (see the module doc)."""
    xa, xb = _positive(a), _positive(b)
    if xa.size == 0 or xb.size == 0:
        return Ratio(NAN, NAN, NAN, int(xa.size), int(xb.size))
    value = float(np.median(xa) / np.median(xb))
    if xa.size < 2 or xb.size < 2:
        return Ratio(value, NAN, NAN, int(xa.size), int(xb.size))
    la, lb = np.log(xa), np.log(xb)
    va, vb = float(np.var(la, ddof=1)), float(np.var(lb, ddof=1))
    df = welch_df(va, la.size, vb, lb.size)
    q = t_quantile(df, confidence) if math.isfinite(df) else float(sps.norm.ppf((1 + confidence) / 2))
    diff = float(np.mean(la) - np.mean(lb))
    half = q * math.sqrt(va / la.size + vb / lb.size)
    return Ratio(value, math.exp(diff - half), math.exp(diff + half), int(xa.size), int(xb.size))


def cv(values: Sequence[float]) -> float:
    """Sample standard deviation / mean (dimensionless); NaN below 2 values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return NAN
    return float(np.std(x, ddof=1) / np.mean(x))
