"""The four verdicts of a comparison, the same words in every command, table and file; what each
means and how it controls its errors: docs/explanation/statistics.md, "Verdicts".

For a ratio r with CI [lo, hi], m = :data:`harness.formulas.stats.MIN_EFFECT` and L = log(1 + m):
**higher** / **lower** when the CI excludes 1, |log r| >= L and the false-discovery control (where
a run judges many comparisons) rejects "no difference"; **equivalent** when the CI lies inside
[1 / (1 + m), 1 + m] (the CI alone); **undecided** otherwise; **not measured**: no instance."""

from __future__ import annotations

import math

HIGHER, LOWER, EQUIVALENT, UNDECIDED = "higher", "lower", "equivalent", "undecided"
NOT_MEASURED = "not measured"
DECIDED = (HIGHER, LOWER, EQUIVALENT)
"""The verdicts that need no more evidence."""


def judge(value: float, low: float, high: float, min_effect: float, significant: bool = True) -> str:
    """The verdict of a ratio ``value`` with CI [``low``, ``high``] against 1 (see the module doc);
    ``significant``: whether the false-discovery control lets a difference stand. Undecided without
    a finite, positive CI."""
    if not all(math.isfinite(v) and v > 0 for v in (value, low, high)):
        return UNDECIDED
    band = math.log1p(min_effect)
    centre, lo, hi = math.log(value), math.log(low), math.log(high)
    if (lo > 0 or hi < 0) and abs(centre) >= band:
        return (HIGHER if centre > 0 else LOWER) if significant else UNDECIDED
    return EQUIVALENT if equivalent(low, high, min_effect) else UNDECIDED


def equivalent(low: float, high: float, min_effect: float) -> bool:
    """Whether a ratio's CI [``low``, ``high``] lies inside [1 / (1 + min_effect), 1 + min_effect]:
    no difference of ``min_effect`` or more."""
    return 1 / (1 + min_effect) <= low and high <= 1 + min_effect


def phrase(verdict: str, scaled: bool) -> str:
    """The verdict as a table shows it: for a scaled ratio (a scaling efficiency, whose verdict
    compares throughput), said of the speed-up, so that "equivalent" beside an efficiency of 0.5
    reads as "no faster than one device" and not as "equal to 1"."""
    if not scaled or verdict not in DECIDED:
        return verdict
    return {
        HIGHER: "higher: faster than one device",
        LOWER: "lower: slower than one device",
        EQUIVALENT: "equivalent: no faster than one device",
    }[verdict]
