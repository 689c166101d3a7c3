"""The one change-point search (:mod:`harness.formulas.change_points`) and its two callers: the
regression gate's binary segmentation and nightly's permutation test, on fixed series with the
decisions they gave before they shared it."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.comparisons import gate
from harness.analysis.versions import nightly
from harness.formulas import change_points

STEPS = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 90.0, 91.0, 89.5, 90.5, 90.0, 89.0]
STEPS += [95.0, 95.5, 94.5, 95.0, 96.0, 94.0]
FLAT = [100.0, 100.4, 99.7, 100.2, 99.9, 100.1, 99.8, 100.3, 100.0, 99.6]
ONE_STEP = [50.0, 50.5, 49.5, 50.2, 55.0, 55.3, 54.8, 55.1, 55.4, 54.9]


@pytest.mark.parametrize("values, found", [(STEPS, [6, 12]), (FLAT, []), (ONE_STEP, [4])])
def test_the_gate_finds_the_steps_it_found_before(values: list[float], found: list[int]) -> None:
    assert gate.change_points(values) == found
    assert gate.change_points(values, min_size=2, threshold=3.0) == found


QUIET = [0.001, -0.002, 0.0, 0.002, -0.001, 0.001, -0.002, 0.0, 0.001, -0.001, 0.0, 0.002]
DROP = QUIET + [-0.03, -0.031, -0.029, -0.03, -0.032, -0.028, -0.03, -0.031]
RISE = [0.0, 0.004, -0.003, 0.002, -0.001, 0.003, -0.002, 0.001, 0.012, 0.015, 0.011, 0.014]
LOOSE = nightly.Rules(alpha=0.05, permutations=999, min_shift=0.0)


@pytest.mark.parametrize(
    "logs, strict, loose",
    [
        (DROP, (12, 0.970243378454239, 0.0002), (12, 0.970243378454239, 0.001)),
        (QUIET, None, None),
        (RISE, None, (8, 1.0125784515406344, 0.006)),
    ],
)
def test_nightly_decides_as_it_did_before(
    logs: list[float], strict: tuple[int, float, float] | None, loose: tuple[int, float, float] | None
) -> None:
    assert nightly.change_point(logs, nightly.Rules()) == strict
    assert nightly.change_point(logs, LOOSE) == loose


def test_the_split_statistic_by_hand() -> None:
    # [0, 0, 0, 1, 1, 1]: split 3, means 0 and 1, sqrt(1/3 + 1/3) = 0.816497; sigma 0.5 -> 2.449490;
    # pooled sd 0: the denominator's floor 1e-12
    x = np.array([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])
    stat, split = change_points.best_splits(x, 2, sigma=0.5)
    assert (stat[0], split[0]) == (pytest.approx(2.449490, rel=1e-6), 3)
    stat, split = change_points.best_splits(x, 2)
    assert (stat[0], split[0]) == (pytest.approx(1e12), 3)
    assert change_points.segments(x[0], 2, 2.0, 0.5) == [3]
    assert change_points.segments(x[0], 2, 2.5, 0.5) == []
    assert change_points.segments(x[0], 4, 0.0, 0.5) == []  # too short for two sides of 4
