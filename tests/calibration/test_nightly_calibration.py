"""nightly's rules replayed on a literal pool (:mod:`benchmarks.nightly_calibration`)."""

from __future__ import annotations

import numpy as np

from benchmarks.nightly_calibration import Scenario, calibrate
from harness.analysis.versions.nightly import Rules

RULES = Rules()


def test_calibration_replay_on_a_literal_pool() -> None:
    """A pool of 3 % pair noise, 25 pairs a night: the rules' targets hold (the real pools are
    measured in benchmarks/test_nightly_calibration.py)."""
    rng = np.random.default_rng(1)
    pools = {"c": np.exp(rng.normal(0, 0.03, 60)).tolist()}
    got = calibrate(pools, {"c": 25}, RULES, Scenario(trials=40), seed=2)
    assert got.aa_at_most_one >= 0.9
    assert got.step_caught >= 0.9
    assert got.drift_caught >= 0.95 and got.drift_nights_median <= 8
