"""Nightly tracking's two decisions per cell and night (``python -m harness nightly``). Pure.

A night's point per cell is the mean candidate/reference log ratio over its pairs with its standard
error (a :class:`Night`); a series is a cell's nights on one machine fingerprint, suite version and
reference pin, oldest first. **Rule (a)** (:func:`tonight`): tonight against its baseline's level,
decided as ``ab``'s rule; an alarm's night starts the next baseline (:func:`judge`). **Rule (b)**
(:func:`change_point`): a permutation test hand-written rather than ``scipy.stats.permutation_test``
to stop drawing once the shuffles rule out ``alpha`` (Besag and Clifford 1991). The rules in words:
docs/how-to/nightly.md and docs/explanation/statistics.md, "nightly"."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.versions.ab import interval_verdict
from harness.formulas.change_points import best_splits, permutation_p
from harness.formulas.stats import t_quantile
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

REGRESSION, IMPROVEMENT = "regression", "improvement"
"""The alarms: a night (rule a) or a change point (rule b) lower or higher than before."""
REVERTED = "reverted"
"""Rule (a): back at the level before the previous night's alarm (that alarm was a glitch)."""

EXIT_CODES = {"no regression": 0, "regression": 1, "a cell failed": 1, "undecided": 3}
"""``nightly``'s exit codes, by the night's overall verdict (:func:`overall`)."""


@dataclass(frozen=True)
class Rules:
    """The decisions' settings: ``min_effect`` F of rule (a) (relative), its CI ``confidence``;
    rule (b)'s false-alarm rate ``alpha`` per cell and night, smallest level change ``min_shift``
    (relative), fewest nights a side ``min_side``, newest ``window`` nights tested,
    ``permutations``; the baseline's most nights."""

    min_effect: float = 0.02
    confidence: float = 0.95
    alpha: float = 0.002
    min_shift: float = 0.01
    min_side: int = 3
    window: int = 60
    permutations: int = 4999
    baseline_nights: int = 7

    def __post_init__(self) -> None:
        if not 0 < self.min_effect < 1:
            raise ValueError(f"min_effect={self.min_effect}; expected a fraction in (0, 1), e.g. 0.02")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha={self.alpha}; expected a probability in (0, 0.5), e.g. 0.002")
        if self.permutations * self.alpha < 5:
            raise ValueError(
                f"permutations={self.permutations} cannot resolve alpha={self.alpha}; expected at "
                f"least {math.ceil(5 / self.alpha)}"
            )
        if not 0 <= self.min_shift < 1:
            raise ValueError(f"min_shift={self.min_shift}; expected a fraction in [0, 1), e.g. 0.01")
        if self.min_side < 2 or self.window < 2 * self.min_side or self.baseline_nights < 1:
            raise ValueError(
                f"min_side={self.min_side}, window={self.window}, baseline_nights="
                f"{self.baseline_nights}; expected min_side >= 2, window >= 2 x min_side, "
                "baseline_nights >= 1"
            )


@dataclass(frozen=True)
class Night:
    """One cell's night: ``label`` (a commit, a date, a version), the mean over ``pairs`` of the
    pair log ratios candidate/reference, and its standard error (nan with fewer than 2 pairs)."""

    label: str
    log_ratio: float
    se: float
    pairs: int

    @property
    def ratio(self) -> float:
        """Tonight's candidate/reference throughput ratio (geometric mean over pairs)."""
        return math.exp(self.log_ratio)

    def ci(self, confidence: float) -> tuple[float, float]:
        """The ratio's Student-t CI over pairs (nan, nan with fewer than 2 pairs)."""
        if self.pairs < 2 or not math.isfinite(self.se):
            return math.nan, math.nan
        half = t_quantile(self.pairs - 1, confidence) * self.se
        return math.exp(self.log_ratio - half), math.exp(self.log_ratio + half)


def night_of(label: str, ratios: Sequence[float]) -> Night:
    """A night from its pairs' candidate/reference ratios."""
    x = np.asarray(ratios, dtype=float)
    if not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError(
            f"pair ratios must be finite and positive; received {sorted(set(x[~(np.isfinite(x) & (x > 0))]))}"
        )
    logs = np.log(x)
    n = int(logs.size)
    if n == 0:
        return Night(label, math.nan, math.nan, 0)
    se = float(np.std(logs, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return Night(label, float(np.mean(logs)), se, n)


@dataclass(frozen=True)
class Change:
    """Rule (a) on one night: tonight over its baseline's level, the CI, the verdict, and the
    labels of the baseline nights (empty: against the reference itself)."""

    ratio: float
    low: float
    high: float
    verdict: str
    baseline: tuple[str, ...] = ()


@dataclass(frozen=True)
class LevelShift:
    """Rule (b)'s finding: the level changes before night ``label`` (``index`` in the series),
    by ``shift`` (after / before), with permutation p-value ``p``; ``new`` unless rule (a) had
    already raised this alarm on a night since."""

    index: int
    label: str
    shift: float
    p: float
    new: bool = True

    @property
    def direction(self) -> str:
        return REGRESSION if self.shift < 1 else IMPROVEMENT


@dataclass(frozen=True)
class NightVerdict:
    """One cell's night judged: rule (a)'s change and rule (b)'s change point (None: none found
    tonight)."""

    night: Night
    change: Change
    change_point: LevelShift | None = None

    @property
    def alarms(self) -> tuple[str, ...]:
        """The new alarms tonight: rule (a)'s regression or improvement, and a new change point's."""
        out = [ALARMS[self.change.verdict]] if self.change.verdict in ALARMS else []
        cp = self.change_point
        if cp is not None and cp.new and cp.direction not in out:
            out.append(cp.direction)
        return tuple(out)


ALARMS = {LOWER: REGRESSION, HIGHER: IMPROVEMENT}
"""Rule (a)'s verdicts that raise an alarm, and its kind."""


def tonight(baseline: Sequence[Night], night: Night, rules: Rules) -> Change:
    """Rule (a) of the module doc: ``night`` against the level of ``baseline`` (empty: the
    reference, log ratio 0). The degrees of freedom are Welch-Satterthwaite's: tonight's pairs - 1
    for its own error, the baseline nights - 1 for their scatter (the baseline's pairs otherwise)."""
    labels = tuple(b.label for b in baseline)
    if night.pairs < 2 or not math.isfinite(night.se):
        return Change(night.ratio, math.nan, math.nan, UNDECIDED, labels)
    level, var_base, df_base = 0.0, 0.0, math.inf
    if baseline:
        means = np.array([b.log_ratio for b in baseline])
        within = float(np.mean([b.se**2 for b in baseline]))
        scatter = 0.0
        if means.size >= 3:  # how much more the nights scatter than their own errors say
            scatter = max(0.0, float(np.var(means, ddof=1)) - within)
        level = float(np.mean(means))
        var_base = scatter + (within + scatter) / means.size
        df_base = means.size - 1.0 if scatter > 0 else float(sum(b.pairs - 1 for b in baseline))
    var_t = night.se**2
    df = (var_t + var_base) ** 2 / (var_t**2 / (night.pairs - 1) + var_base**2 / df_base)
    d = night.log_ratio - level
    half = t_quantile(df, rules.confidence) * math.sqrt(var_t + var_base)
    low, high = math.exp(d - half), math.exp(d + half)
    return Change(math.exp(d), low, high, interval_verdict(low, high, rules.min_effect), labels)


BATCH = 250
"""Shuffles per batch of the permutation test."""


def change_point(log_ratios: Sequence[float], rules: Rules) -> tuple[int, float, float] | None:
    """Rule (b) of the module doc on a segment's nightly log ratios: (the first night after the
    change, the shift after / before, the p-value), or None when the segment is too short, the
    test finds nothing at ``alpha`` or the shift is below ``min_shift``."""
    x = np.asarray(log_ratios, dtype=float)[-rules.window :]
    offset = len(log_ratios) - x.size
    if x.size < 2 * rules.min_side or not np.all(np.isfinite(x)):
        return None
    observed, split = best_splits(x[None, :], rules.min_side)
    p = permutation_p(x, float(observed[0]), rules.min_side, rules.alpha, rules.permutations, BATCH)
    at = int(split[0])
    shift = math.exp(float(np.mean(x[at:]) - np.mean(x[:at])))
    if p > rules.alpha or abs(math.log(shift)) < math.log1p(rules.min_shift):
        return None
    return offset + at, shift, p


def _baseline(series: Sequence[Night], start: int, end: int, skip: set[int], most: int) -> list[Night]:
    """The newest ``most`` nights of ``series[start:end]``, the nights in ``skip`` left out."""
    return [series[j] for j in range(start, end) if j not in skip][-most:]


OPPOSITE = {LOWER: HIGHER, HIGHER: LOWER}


def judge(series: Sequence[Night], rules: Rules) -> list[NightVerdict]:
    """Both rules on every night of a series, oldest first, as each night would have been judged
    (only the nights before it known); the last element is tonight's.

    A night that reverses the previous night's rule (a) alarm, back to equivalent (or undecided)
    from the level before it, is ``reverted``: that alarm was one night's glitch; it leaves the
    baselines, which return to the earlier level, and tonight raises no alarm of its own."""
    verdicts: list[NightVerdict] = []
    start_a = before_alarm = start_b = 0  # rule (a)'s baseline, the one before its alarm, rule (b)'s segment
    glitches: set[int] = set()
    for i, night in enumerate(series):
        change = tonight(_baseline(series, start_a, i, glitches, rules.baseline_nights), night, rules)
        last = verdicts[-1].change.verdict if verdicts else None
        if last in OPPOSITE and change.verdict == OPPOSITE[last]:
            back = tonight(
                _baseline(series, before_alarm, i - 1, glitches, rules.baseline_nights), night, rules
            )
            if back.verdict in (EQUIVALENT, UNDECIDED):
                change = dataclasses.replace(back, verdict=REVERTED)
                glitches.add(i - 1)
                start_a = before_alarm
        if change.verdict in OPPOSITE:
            before_alarm, start_a = start_a, i
        segment = [j for j in range(start_b, i + 1) if j not in glitches]
        found = change_point([series[j].log_ratio for j in segment], rules)
        cp = None
        if found is not None:
            at, shift, p = found
            index = segment[at]
            direction = REGRESSION if shift < 1 else IMPROVEMENT
            since = max(start_b, index - 1)  # rule (a)'s alarm may land a night before the split
            seen = any(ALARMS.get(v.change.verdict) == direction for v in verdicts[since:])
            seen = seen or ALARMS.get(change.verdict) == direction
            cp = LevelShift(index, series[index].label, shift, p, new=not seen)
            start_b = index
            start_a = max(start_a, index)
        verdicts.append(NightVerdict(night, change, cp))
    return verdicts


def rules_out_regression(change: Change, min_effect: float) -> bool:
    """True when rule (a)'s CI ends at or above 1 - F (a regression of F or more is ruled out), or
    its verdict is higher."""
    return change.verdict == HIGHER or (math.isfinite(change.low) and change.low >= 1 - min_effect)


def overall(verdicts: Sequence[NightVerdict], rules: Rules, failed: int = 0) -> str:
    """The night's verdict over cells, a regression gate's: a cell failed, else regression
    (a new regression alarm), else undecided (a cell whose CI reaches below 1 - F: a regression of
    F can be neither claimed nor ruled out), else no regression (a CI that straddles only 1 + F
    is not a gate's concern)."""
    if failed:
        return "a cell failed"
    if any(REGRESSION in v.alarms for v in verdicts):
        return "regression"
    if not verdicts or not all(rules_out_regression(v.change, rules.min_effect) for v in verdicts):
        return "undecided"
    return "no regression"
