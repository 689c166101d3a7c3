"""A prediction's 95% interval (``predict``, ``compare-links``), the delta method in log space:
var log figure = the sum of each part's weight x variance (a measured step's, from its CI:
:func:`log_sd`; a least-squares fit's, from its covariance: :func:`fit_relative`; the model's own
error: :func:`model_error`); exp(log figure -+ t sqrt(var)), t at the parts' Welch-Satterthwaite
df, never narrower than its widest part alone. Pure: numpy and scipy. The parts and their sources:
docs/how-to/hardware.md and docs/explanation/statistics.md ("A prediction's interval")."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import optimize

from harness.formulas.across_runs import Side, Term
from harness.formulas.across_runs import interval as side_interval
from harness.formulas.stats import NAN, t_quantile

MODEL = "model error"
Matrix = npt.NDArray[np.float64]


def log_sd(low: float | None, high: float | None, df: float) -> float:
    """sd of a log figure from its 95% CI [low, high] (a Student t at ``df``); NaN without one."""
    if low is None or high is None or not (0 < low <= high) or not df > 0:
        return NAN
    return (math.log(high) - math.log(low)) / (2 * t_quantile(df))


def covariance(design: Matrix, residuals: Matrix) -> tuple[float, Matrix, int]:
    """s^2, s^2 (D'D)^-1 and N - p df of a least-squares fit of design D (N x p) with these
    residuals (s^2 infinite with no df)."""
    dof = int(design.shape[0] - design.shape[1])
    s2 = float(residuals @ residuals) / dof if dof > 0 else math.inf
    return s2, s2 * np.linalg.pinv(design.T @ design).astype(np.float64), dof


def fit_relative(features: Matrix, seconds: Matrix) -> tuple[Matrix, float, Matrix, int, float]:
    """Non-negative least squares of ``seconds`` (N) = ``features`` (N x p) @ x, weighted relatively
    (each point's error as a fraction of its time, so 4 bytes count as much as 64 MiB): x, s^2, its
    covariance s^2 (D'D)^-1, N - p df (:func:`covariance`) and the relative residuals' RMS."""
    design = features / seconds[:, None]
    x, _ = optimize.nnls(design, np.ones_like(seconds))
    residuals = design @ x - 1  # (fitted - t) / t
    s2, cov, df = covariance(design, residuals)
    return x, s2, cov, df, float(np.sqrt(np.mean(residuals**2)))


def model_error(log_errors: Sequence[float]) -> Term | None:
    """v_m: the mean square of ``log_errors`` (log(measured / predicted)) with as many df; None
    without one."""
    if not log_errors:
        return None
    return Term(MODEL, 1.0, float(np.mean(np.square(log_errors))), len(log_errors))


def interval(value: float, terms: Sequence[Term]) -> tuple[float, float]:
    """The 95% interval of a figure ``value`` > 0 whose log has these variance terms (module doc);
    NaN ends where a term's variance or df is unknown."""
    held = tuple(t for t in terms if t.weight)
    if not value > 0 or any(not (math.isfinite(t.variance) and t.df > 0) for t in held):
        return NAN, NAN
    _, low, high = side_interval(Side(value, math.log(value), 1, held))
    widest = max((t_quantile(t.df) * math.sqrt(t.weight * t.variance) for t in held), default=0.0)
    return min(low, value * math.exp(-widest)), max(high, value * math.exp(widest))
