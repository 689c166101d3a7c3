"""The four verdicts (harness.formulas.verdicts) on literal CIs: equivalent only inside +-5 %."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.formulas.verdicts import DECIDED, EQUIVALENT, HIGHER, LOWER, UNDECIDED, judge, phrase

BAND = (1 / 1.05, 1.05)


@pytest.mark.parametrize(
    "value, low, high, significant, verdict",
    [
        (1.20, 1.10, 1.30, True, HIGHER),
        (0.80, 0.70, 0.90, True, LOWER),
        (0.80, 0.70, 0.90, False, UNDECIDED),  # held back by the false-discovery control
        (1.01, 0.96, 1.04, True, EQUIVALENT),
        (1.01, 0.96, 1.04, False, EQUIVALENT),  # the control never touches equivalence
        (1.03, 1.01, 1.06, True, UNDECIDED),  # beyond 1, under 5 %, CI past 1.05
        (1.20, 0.95, 1.50, True, UNDECIDED),  # CI reaches 1 and past 1.05
        (0.639, 0.410, 0.995, True, LOWER),  # wholly below 1 and 36 % off: a difference
        (1.0, float("nan"), float("nan"), True, UNDECIDED),  # no CI
        (1.0, 0.0, 1.1, True, UNDECIDED),  # not a positive CI
    ],
)
def test_judge_on_literal_cis(value: float, low: float, high: float, significant: bool, verdict: str) -> None:
    assert judge(value, low, high, 0.05, significant) == verdict


@given(
    centre=st.floats(-1.0, 1.0),
    below=st.floats(0.0, 1.0),
    above=st.floats(0.0, 1.0),
    significant=st.booleans(),
)
def test_equivalent_exactly_when_the_ci_lies_inside_the_band(
    centre: float, below: float, above: float, significant: bool
) -> None:
    value, low, high = math.exp(centre), math.exp(centre - below), math.exp(centre + above)
    verdict = judge(value, low, high, 0.05, significant)
    inside = BAND[0] <= low and high <= BAND[1]
    assert (verdict == EQUIVALENT) == (inside and verdict not in (HIGHER, LOWER))
    if verdict in (HIGHER, LOWER):  # a difference: CI beyond 1, effect at least 5 %, significant
        assert significant and (low > 1 or high < 1) and abs(centre) >= math.log(1.05)
    assert verdict in DECIDED or verdict == UNDECIDED


def test_a_scaling_verdict_is_said_of_the_speed_up() -> None:
    assert phrase(EQUIVALENT, scaled=True) == "equivalent: no faster than one device"
    assert phrase(HIGHER, scaled=True) == "higher: faster than one device"
    assert phrase(UNDECIDED, scaled=True) == UNDECIDED
    assert phrase(LOWER, scaled=False) == LOWER
