"""Paired A/B comparison of two builds or settings on one machine (``python -m harness ab``). Pure.

Each pair is one A process and one B process of the same cell, in turns or back to back, in an order
drawn per pair (AB or BA, seeded). A pair's ratio is B's figure over A's (examples/s: below 1, B is
slower). The sequential rule, after each pair from ``min_pairs`` on, with F = ``min_effect``:
docs/explanation/statistics.md, "ab" (its calibration: benchmarks/test_ab_calibration.py)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.contract.records import Status
from harness.formulas.stats import log_t_interval
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
    ratio, low, high = log_t_interval(logs, rule.confidence)
    verdict = interval_verdict(low, high, rule.min_effect) if logs.size >= rule.min_pairs else UNDECIDED
    return Decision(ratio, low, high, int(logs.size), verdict)


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
