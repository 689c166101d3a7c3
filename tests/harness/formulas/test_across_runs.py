"""Ratios between runs that could not take turns: the variance model fitted from runs of one
machine, pooled, and carried into every CI with its own uncertainty."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.formulas import across_runs
from harness.formulas.across_runs import ONE, PS, Run, RunFigure, RunSpread, Sums, fit, side


def simulate(
    rng: np.random.Generator, runs: int, configs: int, shift: float, inter: float, noise: float, ps: int = 0
) -> list[Run]:
    """``runs`` runs of one machine: log figure = config effect + run shift + run-by-config term +
    3 processes' noise (sds, log units); the last ``ps`` configurations are parameter-server
    cells with a run-by-config term 3x as wide."""
    effects = rng.normal(np.log(1000), 1, configs)
    out = []
    for r in range(runs):
        delta = rng.normal(0, shift)
        figures = {}
        for c in range(configs):
            kind = PS if c >= configs - ps else ONE
            g = rng.normal(0, inter * (3 if kind == PS else 1))
            procs = tuple(float(x) for x in np.exp(effects[c] + delta + g + rng.normal(0, noise, 3)))
            figures[f"c{c}"] = (kind, RunFigure(float(np.exp(np.mean(np.log(procs)))), procs))
        out.append(Run(f"2026-12-07T0{r % 10}:00:00+00:00", figures))
    return out


def test_the_fit_recovers_a_known_shift_and_run_by_configuration_term() -> None:
    rng = np.random.default_rng(1)
    spread = sum((fit(simulate(rng, 4, 34, 0.04, 0.02, 0.05)) for _ in range(30)), RunSpread())
    shift = spread.part(across_runs.SHIFT)
    assert shift.df == 30 * 3 and spread.pairs == 30 * 6 and spread.machines == 30
    assert math.sqrt(shift.variance) == pytest.approx(0.04, rel=0.2)
    g = spread.between(ONE)
    assert math.sqrt(g.variance) == pytest.approx(0.02, rel=0.2) and g.df == pytest.approx(30 * 3 * 33)
    # a process's own spread, pooled over the kind's processes: 2 df a run and configuration
    p = spread.part(across_runs.within(ONE))
    assert math.sqrt(p.variance) == pytest.approx(0.05, rel=0.05) and p.df == 30 * 4 * 34 * 2


def test_noise_alone_is_told_from_a_run_by_configuration_term() -> None:
    """The processes' own spread explains A/A differences: the fitted term is near 0, not the
    noise's size."""
    rng = np.random.default_rng(2)
    spread = sum((fit(simulate(rng, 3, 34, 0.0, 0.0, 0.08)) for _ in range(20)), RunSpread())
    assert math.sqrt(spread.between(ONE).variance) < 0.015


def test_a_noisier_kind_gets_its_own_term_where_an_f_test_says_so() -> None:
    rng = np.random.default_rng(3)
    spread = sum((fit(simulate(rng, 3, 34, 0.01, 0.02, 0.02, ps=8)) for _ in range(10)), RunSpread())
    ps, one = spread.between(PS), spread.between(ONE)
    assert ps.variance > 4 * one.variance and ps.df < one.df


def test_a_side_is_never_narrower_than_a_a_pairs_show() -> None:
    """G + the kind's usual process noise (the residual mean square) is the least a run's
    configuration varies by; runs with noisier processes than usual vary more."""
    parts = (
        (across_runs.SHIFT, Sums(0.0, 0.0, 10)),
        (across_runs.between(ONE), Sums(0.03**2 * 40, 0.01**2 * 40, 40)),
    )
    spread = RunSpread(parts, 10, 2)
    tight = side([RunFigure(100.0, (99.9, 100.0, 100.1))], spread, ONE)
    loose = side([RunFigure(100.0, (80.0, 100.0, 125.0))], spread, ONE)
    assert tight.variance == pytest.approx(0.03**2) and loose.variance > 0.03**2


def test_coverage_of_a_a_pairs_one_run_a_side() -> None:
    """A/A: with the spread fitted on other runs of the machine, the ratio CI of two fresh runs
    holds 1 for about 95% of configurations."""
    rng = np.random.default_rng(4)
    spread = sum((fit(simulate(rng, 3, 34, 0.03, 0.02, 0.05)) for _ in range(6)), RunSpread())
    held = total = 0
    for _ in range(60):
        a, b = simulate(rng, 2, 34, 0.03, 0.02, 0.05)
        for c in a.figures:
            ra, rb = (side([run.figures[c][1]], spread, ONE) for run in (a, b))
            r = across_runs.ratio(ra, rb)
            held += r.low <= 1 <= r.high
            total += 1
    assert 0.92 <= held / total <= 0.985


def test_few_pairs_widen_the_interval_through_the_degrees_of_freedom() -> None:
    runs = [RunFigure(100.0, (99.0, 100.0, 101.0))]
    g = (across_runs.between(ONE), Sums(0.01, 0.0, 33))
    few = RunSpread(((across_runs.SHIFT, Sums(0.0016, 0.0, 1)), g), 1, 1)
    many = RunSpread(((across_runs.SHIFT, Sums(0.0016 * 40, 0.0, 40)), g), 40, 20)
    wide, narrow = (across_runs.ratio(side(runs, s, ONE), side(runs, s, ONE)) for s in (few, many))
    assert wide.high > narrow.high > 1
    # the shift both sides share is one component: its weight adds, its df counts once
    terms = across_runs.combined(side(runs, few, ONE), side(runs, few, ONE))
    assert [t.weight for t in terms if t.name == across_runs.SHIFT] == [2.0]


def test_runs_to_decide_grow_as_a_difference_shrinks_and_end_below_the_band_edge() -> None:
    parts = (
        (across_runs.SHIFT, Sums(0.03**2 * 20, 0.0, 20)),
        (across_runs.between(ONE), Sums(0.02**2 * 100, 0.0, 100)),
    )
    s = RunSpread(parts, 20, 5)
    base = side([RunFigure(100.0, (97.0, 100.0, 103.0))], s, ONE)
    band = math.log1p(0.05)

    def runs(x: float) -> int | None:
        return across_runs.decide_runs(side([RunFigure(x, (x * 0.97, x, x * 1.03))], s, ONE), base, band)

    assert runs(112.0) is not None and runs(108.0) is not None
    assert runs(112.0) <= runs(108.0)  # type: ignore[operator]
    assert runs(104.9) is None  # just inside the band: equivalence needs a CI no run count gives


def test_a_spread_names_where_it_was_measured() -> None:
    rng = np.random.default_rng(5)
    spread = fit(simulate(rng, 3, 5, 0.01, 0.01, 0.01))
    assert spread.words == "3 pairs of runs of 1 machine, 2026-12-07 to 2026-12-07, 1.0 h to 2.0 h apart"
    assert RunSpread().words == "no pair of runs of one machine"
    assert fit(simulate(rng, 1, 5, 0.01, 0.01, 0.01)) == RunSpread()


def test_a_run_of_one_process_takes_the_kinds_pooled_process_spread() -> None:
    parts = (
        (across_runs.SHIFT, Sums(0.0, 0.0, 10)),
        (across_runs.between(ONE), Sums(0.0, 0.0, 50)),
        (across_runs.within(ONE), Sums(0.05**2 * 200, 0.0, 200)),
    )
    one = side([RunFigure(100.0, (100.0,))], RunSpread(parts, 10, 2), ONE)
    assert one.variance == pytest.approx(0.05**2) and across_runs.interval(one)[1] < 100
    assert math.isnan(side([RunFigure(100.0, (100.0,))], RunSpread(), ONE).variance)


def test_no_runs_or_no_figure_is_an_error() -> None:
    with pytest.raises(ValueError):
        side([], RunSpread(), ONE)
    with pytest.raises(ValueError, match="> 0"):
        side([RunFigure(0.0, ())], RunSpread(), ONE)
