"""A ratio between runs that could not take turns: two machines, or one machine on two days.

Processes of one run are not independent of the run: a slow spell of the machine, another tenant
of the host, the CPU a VM landed on move every process of it. So a ratio across runs carries the
**run-to-run spread** as well as each run's processes (docs/explanation/statistics.md):

With a side's k runs of one configuration, m_r = mean(log x_p) over run r's process figures x_p
and w_r = var(log x_p) / P_r (the run's own uncertainty):

- **measured** (k >= MIN_RUNS): s^2 = var(m_r) with k - 1 degrees of freedom, the machine's own
  runs; where that is below the floor RUN_SPREAD^2 + mean(w_r), the floor, taken as known (a
  normal interval), so that a CI never widens as runs are added;
- **calibrated** (k < MIN_RUNS): s^2 = RUN_SPREAD^2 + mean(w_r), a normal interval: one run says
  nothing of how far the next one lands, so the spread measured by A/A runs stands in.

The side's centre is mean(m_r), its variance s^2 / k; the ratio a / b is the ratio of the sides'
figures (the median of their run figures), its CI exp((c_a - c_b) +- q sqrt(v_a + v_b)), q the
Student-t quantile of the Welch-Satterthwaite degrees of freedom (normal where a side is
calibrated).

One machine over time (``compare``, the regression gate) is the same formula with no floor
(``run_spread=0``: the baseline's own runs are the evidence) and the candidate's few runs given the
baseline's spread (:func:`like`): they ran on the same machine, so the baseline's runs say how far
one run lands; the interval then has the baseline's degrees of freedom. Pure: numpy and scipy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from harness.formulas.stats import CONFIDENCE, NAN, Ratio, t_quantile

RUN_SPREAD = 0.15
"""Standard deviation of a configuration's log run figure between runs on one machine, beyond its
processes' own: the floor of every cross-machine CI. On the 2-core VMs: one-process runs minutes
apart spread 15.7% (cnn) and 18.6% (dense) over 30 runs (2026-11-21, docs/explanation/calibration.md);
a `nox -s bench` figure (a median over 3 or more processes spread over 13 minutes) moved 3.8% per
run between two runs half an hour apart (34 configurations, 2026-11-28,
docs/evidence/2026-11-28-machines). Kept at 15%: two runs of one session are not two days, nor two
instances of one VM type."""

MIN_RUNS = 3
"""Runs of a configuration on one machine before its own spread is measured rather than assumed."""


class Basis(StrEnum):
    """Where a side's run-to-run spread comes from."""

    MEASURED = "measured"
    CALIBRATED = "calibrated"


@dataclass(frozen=True)
class RunFigure:
    """One run's figure of one configuration: ``processes``, its per-process figures (examples/s),
    and ``value``, the run's figure (their median, or the run's stored figure)."""

    value: float
    processes: tuple[float, ...] = ()

    @property
    def centre(self) -> float:
        """mean(log x_p), or log(value) with no process figures."""
        x = np.asarray([p for p in self.processes if p > 0], dtype=float)
        return float(np.mean(np.log(x))) if x.size else math.log(self.value)

    @property
    def within(self) -> float:
        """var(log x_p) / P: the run's own variance of its centre (0 below 2 processes)."""
        x = np.asarray([p for p in self.processes if p > 0], dtype=float)
        return float(np.var(np.log(x), ddof=1) / x.size) if x.size >= 2 else 0.0


@dataclass(frozen=True)
class Side:
    """One side's evidence: its centre (log examples/s), the variance of that centre, its degrees
    of freedom (inf: calibrated), where its spread comes from, and its runs."""

    value: float
    centre: float
    variance: float
    df: float
    basis: Basis
    runs: int
    run_variance: float = 0.0
    """s^2: the variance of one run's log figure (the side's variance is s^2 / runs)."""
    borrowed: bool = False
    """Whether s^2 is another side's (:func:`like`): the ratio then has that side's df."""


def side(runs: Sequence[RunFigure], run_spread: float = RUN_SPREAD) -> Side:
    """One side's :class:`Side` from its runs (see the module doc); ValueError with none, or a
    figure that is not > 0."""
    if not runs or any(not r.value > 0 for r in runs):
        raise ValueError(f"a side needs run figures > 0; received {[r.value for r in runs]}")
    centres = np.asarray([r.centre for r in runs])
    floor = run_spread**2 + float(np.mean([r.within for r in runs]))
    k = len(runs)
    value = float(np.median([r.value for r in runs]))
    if k >= MIN_RUNS:
        s2 = float(np.var(centres, ddof=1))
        if s2 > floor:  # the runs' own spread, with its k - 1 degrees of freedom
            return Side(value, float(np.mean(centres)), s2 / k, k - 1, Basis.MEASURED, k, s2)
        return Side(value, float(np.mean(centres)), floor / k, math.inf, Basis.MEASURED, k, floor)
    if floor == 0.0:  # no calibrated spread and too few runs to measure one: no CI
        return Side(value, float(np.mean(centres)), NAN, math.inf, Basis.CALIBRATED, k, NAN)
    return Side(value, float(np.mean(centres)), floor / k, math.inf, Basis.CALIBRATED, k, floor)


def like(runs: Sequence[RunFigure], other: Side) -> Side:
    """A side of ``runs`` whose run-to-run spread is ``other``'s (runs of the same machine)."""
    if not runs or any(not r.value > 0 for r in runs):
        raise ValueError(f"a side needs run figures > 0; received {[r.value for r in runs]}")
    k = len(runs)
    centre = float(np.mean([r.centre for r in runs]))
    value = float(np.median([r.value for r in runs]))
    s2 = other.run_variance
    return Side(value, centre, s2 / k, other.df, other.basis, k, s2, borrowed=True)


def interval(s: Side, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The side's figure and its CI, exp(centre +- q sqrt(variance)), in its unit (examples/s)."""
    half = t_quantile(s.df, confidence) * math.sqrt(s.variance)
    return s.value, math.exp(s.centre - half), math.exp(s.centre + half)


def ratio(a: Side, b: Side, confidence: float = CONFIDENCE) -> Ratio:
    """a / b of two sides' figures with the CI of the module doc (``n_a``, ``n_b``: their runs)."""
    if not (a.value > 0 and b.value > 0):
        return Ratio(NAN, NAN, NAN, a.runs, b.runs)
    q = t_quantile(_welch(a, b), confidence)  # the normal quantile at df = inf
    diff = a.centre - b.centre
    half = q * math.sqrt(a.variance + b.variance)
    return Ratio(a.value / b.value, math.exp(diff - half), math.exp(diff + half), a.runs, b.runs)


def _welch(a: Side, b: Side) -> float:
    """Welch-Satterthwaite degrees of freedom of the two sides' difference (inf where both are);
    a side whose spread is the other's (:func:`like`) adds none: the other's df."""
    if a.borrowed or b.borrowed:
        return b.df if a.borrowed else a.df
    terms = [s.variance**2 / s.df for s in (a, b) if math.isfinite(s.df)]
    if not terms:
        return math.inf
    return (a.variance + b.variance) ** 2 / sum(terms)
