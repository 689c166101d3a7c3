"""A scaling prediction's interval on literal and seeded numbers: the 1-device step's sd from its CI,
the least-squares covariance, the model error, and their combination."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.formulas import prediction
from harness.formulas.across_runs import Term
from harness.formulas.stats import t_quantile


def test_the_sd_of_a_log_figure_is_its_cis_log_half_width_over_t() -> None:
    # a 3-process CI: exp(mean log +- t(2) sd / sqrt 3); the sd of the mean is what comes back
    sd_mean = 0.1 / math.sqrt(3)
    half = t_quantile(2) * sd_mean
    low, high = 1000 * math.exp(-half), 1000 * math.exp(half)
    assert prediction.log_sd(low, high, 2) == pytest.approx(sd_mean)
    assert prediction.log_sd(math.exp(-1.96), math.exp(1.96), math.inf) == pytest.approx(1.0, rel=1e-3)
    for no in ((None, 2.0, 2), (1.0, None, 2), (1.0, 2.0, 0), (3.0, 2.0, 2)):
        assert math.isnan(prediction.log_sd(*no))


def test_the_covariance_of_a_seeded_fit_matches_the_scatter_of_its_estimates() -> None:
    rng = np.random.default_rng(7)
    x = np.column_stack([np.ones(12), np.linspace(1, 5, 12)])
    truth = np.array([2.0, 0.5])
    fits, covs = [], []
    for _ in range(2000):
        y = x @ truth + rng.normal(0, 0.3, 12)
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        s2, cov, df = prediction.covariance(x, x @ beta - y)
        fits.append(beta)
        covs.append(cov)
    assert df == 10
    scatter = np.cov(np.array(fits).T)
    assert np.mean(covs, axis=0) == pytest.approx(scatter, rel=0.1, abs=1e-4)
    assert np.mean(covs, axis=0)[1, 1] == pytest.approx(
        0.09 / np.sum((x[:, 1] - x[:, 1].mean()) ** 2), rel=0.1
    )
    # no residual degrees of freedom: nothing is known of the spread
    s2, _, df = prediction.covariance(x[:2], np.zeros(2))
    assert df == 0 and s2 == math.inf


def test_the_model_error_is_the_mean_square_of_its_log_errors_with_as_many_df() -> None:
    term = prediction.model_error([0.1, -0.2, 0.2])
    assert term is not None and term.variance == pytest.approx(0.03) and term.df == 3 and term.weight == 1
    assert prediction.model_error([]) is None


def test_the_interval_holds_the_point_and_widens_with_each_part() -> None:
    base = [Term("1-device step", 0.5**2, 0.05**2, 4)]
    low, high = prediction.interval(1000.0, base)
    assert low < 1000 < high
    assert math.log(high / 1000) == pytest.approx(t_quantile(4) * 0.5 * 0.05)  # one part: its own t
    assert math.log(1000 / low) == pytest.approx(math.log(high / 1000))  # symmetric in log
    wider = prediction.interval(1000.0, [Term("1-device step", 0.25, 0.1**2, 4)])
    assert wider[0] < low and wider[1] > high
    fit = Term("all-reduce", 0.5**2, 0.08**2, 8)
    both = prediction.interval(1000.0, [*base, fit])
    assert both[0] < low and both[1] > high
    model = Term(prediction.MODEL, 1.0, 0.2**2, 3)
    everything = prediction.interval(1000.0, [*base, fit, model])
    assert everything[1] > both[1]
    # Welch-Satterthwaite: the same variance known from 3 df is wider than from 300
    sure = prediction.interval(1000.0, [*base, fit, Term(prediction.MODEL, 1.0, 0.2**2, 300)])
    assert everything[1] > sure[1] > both[1]


def test_a_part_joining_never_narrows_the_interval_below_its_widest_part_alone() -> None:
    few = Term("1-device step", 1.0, 0.01**2, 2)  # 2 df: t = 4.30
    alone = prediction.interval(1.0, [few])[1]
    for sd in np.linspace(0.001, 0.05, 50):  # Welch-Satterthwaite alone would dip below t(2) x 1%
        assert prediction.interval(1.0, [few, Term("all-reduce", 1.0, sd**2, 13)])[1] >= alone


def test_exact_parts_give_the_point_and_unknown_ones_no_interval() -> None:
    assert prediction.interval(500.0, [Term("1-device step", 1.0, 0.0, 2)]) == pytest.approx((500.0, 500.0))
    assert prediction.interval(500.0, [Term("all-reduce", 0.0, math.nan, 0)]) == pytest.approx((500.0, 500.0))
    for unknown in (Term("1-device step", 1.0, math.nan, 2), Term("all-reduce", 0.3, math.inf, 0)):
        assert all(math.isnan(x) for x in prediction.interval(500.0, [unknown]))


def test_the_delta_method_covers_a_seeded_step_of_a_known_spread() -> None:
    """step(n) = step(1) s + T with log-normal step(1) and T: the interval's coverage of the
    simulated throughput is close to 95%."""
    rng = np.random.default_rng(3)
    sd1, sdt, step1, t = 0.05, 0.2, 0.010, 0.004
    draws = 4 * 64 / (step1 * np.exp(rng.normal(0, sd1, 20000)) + t * np.exp(rng.normal(0, sdt, 20000)))
    centre = 4 * 64 / (step1 + t)
    c, a = step1 / (step1 + t), t / (step1 + t)
    low, high = prediction.interval(
        centre, [Term("1-device step", c * c, sd1**2, math.inf), Term("all-reduce", a * a, sdt**2, math.inf)]
    )
    assert np.mean((draws >= low) & (draws <= high)) == pytest.approx(0.95, abs=0.02)
    assert sps.norm.ppf(0.975) == pytest.approx(t_quantile(math.inf))
