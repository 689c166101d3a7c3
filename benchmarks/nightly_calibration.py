"""Calibration of nightly's rules by replaying measured pairs (``benchmarks/test_nightly_calibration.py``).
Pure.

A replayed night of a cell draws its number of pairs, with replacement, from the cell's pool of
measured A/A pair ratios (candidate and reference the same build), and multiplies each by the
night's planted factor. Three scenarios, each over ``trials`` independent series per cell:

- ``a/a``: ``nights`` nights, nothing planted; every alarm (rule (a) or a new change point) is false;
- ``step``: ``history`` quiet nights, then every night slower by ``step`` (0.05: 5 %); caught when
  night ``history`` (the first slow one) raises a regression alarm;
- ``drift``: ``history`` quiet nights, then slower by ``drift`` more every night (0.01: 1 % a
  night, compounding); caught when rule (b) reports a regression change point at or after the
  drift's start (new or confirming rule (a)'s alarm) within ``within`` nights of it.

Between-night variation: every replayed night's pairs also share one factor exp(N(0, ``night_sd``))
(0: nights differ only by their pairs, the case an A/A pool of one night can show). The step is
also replayed after a single quiet night (``step_after_one``: the baseline is one night), which is
harder than after ``history``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.versions.nightly import REGRESSION, Night, Rules, judge, night_of


@dataclass(frozen=True)
class Scenario:
    """The replay's settings (see the module doc)."""

    nights: int = 30
    history: int = 10
    step: float = 0.05
    drift: float = 0.01
    within: int = 8
    trials: int = 200
    night_sd: float = 0.0


@dataclass(frozen=True)
class Calibration:
    """What the replay found: A/A alarms per series of ``nights`` nights over every cell (mean, and
    the fraction of series with at most one), the step caught on its night, the drift caught
    within ``within`` nights by rule (b) and the nights it took (median)."""

    aa_alarms_mean: float
    aa_at_most_one: float
    step_caught: float
    drift_caught: float
    drift_nights_median: float
    step_after_one: float


def replay(
    pool: Sequence[float],
    pairs: int,
    factors: Sequence[float],
    rng: np.random.Generator,
    night_sd: float = 0.0,
) -> list[Night]:
    """One cell's series: night i draws ``pairs`` ratios from ``pool``, each times ``factors[i]``
    and the night's own factor exp(N(0, ``night_sd``))."""
    logs = np.log(np.asarray(pool, dtype=float))
    out = []
    for i, factor in enumerate(factors):
        shared = rng.normal(0.0, night_sd) if night_sd > 0 else 0.0
        drawn = logs[rng.integers(logs.size, size=pairs)] + math.log(factor) + shared
        out.append(night_of(f"n{i}", np.exp(drawn).tolist()))
    return out


def _aa_alarms(
    pools: Mapping[str, Sequence[float]],
    pairs: Mapping[str, int],
    s: Scenario,
    rules: Rules,
    rng: np.random.Generator,
) -> int:
    total = 0
    for cell, pool in pools.items():
        verdicts = judge(replay(pool, pairs[cell], [1.0] * s.nights, rng, s.night_sd), rules)
        total += sum(len(v.alarms) for v in verdicts)
    return total


def _drift_night(
    pool: Sequence[float], pairs: int, s: Scenario, rules: Rules, rng: np.random.Generator
) -> int | None:
    """Nights from the drift's start to rule (b)'s regression change point (1: its first night)."""
    factors = [1.0] * s.history + [(1 - s.drift) ** (j + 1) for j in range(s.within)]
    for i, v in enumerate(judge(replay(pool, pairs, factors, rng, s.night_sd), rules)):
        cp = v.change_point
        if cp is not None and cp.index >= s.history and cp.direction == REGRESSION:
            return i - s.history + 1
    return None


def calibrate(
    pools: Mapping[str, Sequence[float]],
    pairs: Mapping[str, int],
    rules: Rules,
    s: Scenario = Scenario(),
    seed: int = 0,
) -> Calibration:
    """The three scenarios of the module doc, every cell of ``pools`` (cell -> measured A/A pair
    ratios) with its ``pairs`` per night."""
    rng = np.random.default_rng(seed)
    aa = [_aa_alarms(pools, pairs, s, rules, rng) for _ in range(s.trials)]
    caught = caught_one = drifted = series = 0
    took: list[int] = []
    for cell, pool in pools.items():
        for _ in range(s.trials):
            series += 1
            for history in (s.history, 1):
                factors = [1.0] * history + [1 - s.step]
                tonight = judge(replay(pool, pairs[cell], factors, rng, s.night_sd), rules)[-1]
                if history == s.history:
                    caught += REGRESSION in tonight.alarms
                else:
                    caught_one += REGRESSION in tonight.alarms
            nights = _drift_night(pool, pairs[cell], s, rules, rng)
            if nights is not None:
                drifted += 1
                took.append(nights)
    return Calibration(
        aa_alarms_mean=float(np.mean(aa)),
        aa_at_most_one=float(np.mean([a <= 1 for a in aa])),
        step_caught=caught / series,
        drift_caught=drifted / series,
        drift_nights_median=float(np.median(took)) if took else math.nan,
        step_after_one=caught_one / series,
    )
