"""Paired A/B comparison of two builds or settings on one machine (``python -m harness ab``). Pure.

Each pair is one A process and one B process of the same cell, run at once on the same CPUs (duet
benchmarking, Bulej et al. 2020: whatever slows the CPUs during the pair slows both sides) or back
to back (Laaber et al. 2019), in an order drawn per pair (AB or BA, seeded) so that neither side is
always first. A pair's ratio is B's figure over A's (examples/s: below 1, B is slower).

Sequential rule, after each pair from ``min_pairs`` on: the CI of the mean log ratio (Student t,
``confidence``) is exponentiated, and the cell is decided when it lies

- wholly below 1 - F: ``slower`` (a regression);
- wholly above 1 + F: ``faster``;
- wholly inside [1 - F, 1 + F]: ``same`` (no difference of F or more);

or left ``undecided`` at ``max_pairs``. F is the smallest effect worth a verdict (``min_effect``):
a true change of exactly F sits on the boundary, so to catch a change of X reliably, F must be
well below X (the default 2 % catches 5 % slowdowns; benchmarks/test_ab_calibration.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.contract.records import Status
from harness.formulas.stats import t_quantile
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

if TYPE_CHECKING:
    import pandas as pd


FAILED = "a cell failed"
"""The verdict of a run in which a cell has no decision (its pairs failed)."""

EXIT_CODES = {"no regression": 0, "regression": 1, FAILED: 1, "undecided": 3}
"""ab's exit codes by verdict (2, bad input, comes from HarnessError)."""


@dataclass(frozen=True)
class Rule:
    """The sequential decision's settings: ``min_effect`` F (relative), ``confidence`` of the CI,
    fewest and most pairs."""

    min_effect: float = 0.02
    confidence: float = 0.95
    min_pairs: int = 5
    max_pairs: int = 30

    def __post_init__(self) -> None:
        if not 0 < self.min_effect < 1:
            raise ValueError(f"min_effect={self.min_effect}; expected a fraction in (0, 1), e.g. 0.02")
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence={self.confidence}; expected a value in (0.5, 1)")
        if not 2 <= self.min_pairs <= self.max_pairs:
            raise ValueError(
                f"min_pairs={self.min_pairs}, max_pairs={self.max_pairs}; expected "
                "2 <= min_pairs <= max_pairs"
            )


@dataclass(frozen=True)
class Decision:
    """Where a cell stands: the geometric-mean ratio B/A, its CI, pairs used, and the verdict."""

    ratio: float
    low: float
    high: float
    pairs: int
    verdict: str


def pair_orders(pairs: int, seed: int) -> list[str]:
    """Each pair's order, "AB" or "BA", drawn independently (seeded, reproducible)."""
    rng = random.Random(seed)
    return [rng.choice(("AB", "BA")) for _ in range(pairs)]


def decide(ratios: Sequence[float], rule: Rule) -> Decision:
    """The sequential rule of the module doc on the pair ratios so far."""
    logs = np.log(np.asarray(ratios, dtype=float))
    n = logs.size
    if n == 0:
        return Decision(math.nan, math.nan, math.nan, 0, UNDECIDED)
    centre = float(np.mean(logs))
    if n < 2:
        return Decision(math.exp(centre), math.nan, math.nan, n, UNDECIDED)
    half = t_quantile(n - 1, rule.confidence) * float(np.std(logs, ddof=1)) / math.sqrt(n)
    low, high = math.exp(centre - half), math.exp(centre + half)
    verdict = interval_verdict(low, high, rule.min_effect) if n >= rule.min_pairs else UNDECIDED
    return Decision(math.exp(centre), low, high, n, verdict)


def interval_verdict(low: float, high: float, min_effect: float) -> str:
    """A ratio's CI [low, high] against 1 +- ``min_effect``: wholly below ``lower``, wholly above
    ``higher``, wholly inside ``equivalent``, else (or not finite) ``undecided``. Stricter than
    :func:`harness.formulas.verdicts.judge` for higher and lower (the whole CI past the band, not
    only its centre), as a sequential rule that stops at the first verdict must be."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return UNDECIDED
    if high < 1 - min_effect:
        return LOWER
    if low > 1 + min_effect:
        return HIGHER
    if low >= 1 - min_effect and high <= 1 + min_effect:
        return EQUIVALENT
    return UNDECIDED


def pair_ratios(rows: pd.DataFrame) -> pd.DataFrame:
    """B/A of every complete pair in a DataFrame of ``ab`` rows: columns cell_id, ab_pair, ratio
    (a pair in turns: its ``ab_turn_ratio``; otherwise B's examples/s over A's)."""
    ok = rows[rows["status"] == Status.OK]
    wide = ok.pivot_table(index=["ab_id", "cell_id", "ab_pair"], columns="ab_side", values="examples_per_sec")
    if not {"A", "B"} <= set(wide.columns):
        return wide.iloc[0:0].reset_index()[["cell_id", "ab_pair"]].assign(ratio=[])
    ratio = wide["B"] / wide["A"]
    if "ab_turn_ratio" in ok:  # a pair in turns: the ratio of its adjacent turns
        turns = ok[ok["ab_side"] == "B"].set_index(["ab_id", "cell_id", "ab_pair"])["ab_turn_ratio"]
        ratio = turns.reindex(ratio.index).astype(float).fillna(ratio)
    return ratio.dropna().reset_index(name="ratio")[["cell_id", "ab_pair", "ratio"]]


def overall(decisions: Sequence[Decision]) -> str:
    """regression (any cell slower), else undecided (any cell undecided), else no regression."""
    verdicts = {d.verdict for d in decisions}
    if LOWER in verdicts:
        return "regression"
    if UNDECIDED in verdicts or not decisions:
        return "undecided"
    return "no regression"


def simulate(pool: Sequence[float], rule: Rule, trials: int, seed: int = 0) -> tuple[dict[str, float], float]:
    """Calibration by resampling: ``trials`` sequential decisions, each drawing pair ratios with
    replacement from ``pool`` (measured pairs) until decided or max_pairs. Returns the fraction
    of trials per verdict and the mean pairs used."""
    rng = np.random.default_rng(seed)
    counts = {LOWER: 0, HIGHER: 0, EQUIVALENT: 0, UNDECIDED: 0}
    used = 0
    for _ in range(trials):
        ratios: list[float] = []
        d = decide(ratios, rule)
        while d.verdict == UNDECIDED and len(ratios) < rule.max_pairs:
            ratios.append(float(pool[int(rng.integers(len(pool)))]))
            d = decide(ratios, rule)
        counts[d.verdict] += 1
        used += d.pairs
    return {k: v / trials for k, v in counts.items()}, used / trials
