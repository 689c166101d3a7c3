"""Ratios between runs that could not take turns: the run-to-run spread in every CI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.formulas import across_runs
from harness.formulas.across_runs import Basis, RunFigure, side


def test_one_run_a_side_uses_the_calibrated_spread() -> None:
    a = side([RunFigure(200.0, (198.0, 200.0, 202.0))])
    b = side([RunFigure(100.0, (99.0, 100.0, 101.0))])
    assert a.basis == b.basis == Basis.CALIBRATED and math.isinf(a.df)
    r = across_runs.ratio(a, b)
    assert r.value == pytest.approx(2.0)
    # processes that agree within 1% leave the CI as wide as the run-to-run spread says
    half = 1.96 * math.sqrt(2) * across_runs.RUN_SPREAD
    assert math.log(r.high / r.value) == pytest.approx(half, rel=0.02)
    assert math.log(r.value / r.low) == pytest.approx(half, rel=0.02)


def test_a_run_with_scattered_processes_is_wider_than_the_floor() -> None:
    tight = side([RunFigure(100.0, (99.0, 100.0, 101.0))])
    loose = side([RunFigure(100.0, (60.0, 100.0, 160.0))])
    assert loose.variance > tight.variance


def test_three_runs_measure_their_own_spread_never_below_the_floor() -> None:
    steady = side([RunFigure(v) for v in (100.0, 100.5, 99.5)])
    assert steady.basis == Basis.MEASURED and math.isinf(steady.df)  # below the floor: the floor
    assert steady.variance == pytest.approx(across_runs.RUN_SPREAD**2 / 3)
    wild = side([RunFigure(v) for v in (60.0, 100.0, 170.0)])
    assert wild.variance > steady.variance and wild.df == 2


def test_more_runs_never_widen_the_ci_of_steady_machines() -> None:
    highs = [across_runs.ratio(s, s).high for k in range(1, 11) if (s := side([RunFigure(100.0)] * k))]
    assert highs == sorted(highs, reverse=True)
    assert highs[0] == pytest.approx(1.516, abs=0.002) and highs[2] < 1.3


def test_a_a_runs_from_one_distribution_are_rarely_called_different() -> None:
    """Coverage: runs drawn with a run-to-run spread at the floor, one a side, 2000 times: the CI
    holds the true ratio 1 about 95% of the time."""
    rng = np.random.default_rng(0)
    held = 0
    for _ in range(2000):
        a, b = np.exp(rng.normal(0, across_runs.RUN_SPREAD, 2))
        r = across_runs.ratio(side([RunFigure(float(a))]), side([RunFigure(float(b))]))
        held += r.low <= 1 <= r.high
    assert 0.93 <= held / 2000 <= 0.97


def test_no_runs_or_no_figure_is_an_error() -> None:
    with pytest.raises(ValueError):
        side([])
    with pytest.raises(ValueError, match="> 0"):
        side([RunFigure(0.0, ())])
