"""The A/B pairing order, the sequential rule and the exit decision on synthetic pairs."""

from __future__ import annotations

import math

import pytest

from harness.analysis.versions import ab

RULE = ab.Rule(min_effect=0.02, confidence=0.95, min_pairs=3, max_pairs=30)


def test_pair_orders_are_seeded_and_use_both_orders() -> None:
    orders = ab.pair_orders(40, seed=1)
    assert orders == ab.pair_orders(40, seed=1) and orders != ab.pair_orders(40, seed=2)
    assert set(orders) == {"AB", "BA"} and 10 < orders.count("AB") < 30


def test_a_clear_slowdown_is_called_slower() -> None:
    d = ab.decide([0.90, 0.91, 0.89], RULE)
    assert d.verdict == ab.LOWER and d.pairs == 3
    assert d.ratio == pytest.approx(math.exp(sum(map(math.log, (0.9, 0.91, 0.89))) / 3))
    assert d.high < 0.98


def test_a_clear_speed_up_is_called_faster_and_equal_sides_same() -> None:
    assert ab.decide([1.10, 1.12, 1.11], RULE).verdict == ab.HIGHER
    assert ab.decide([1.001, 0.999, 1.0, 1.002, 0.998], RULE).verdict == ab.EQUIVALENT


def test_noise_leaves_it_undecided_and_two_pairs_never_decide() -> None:
    assert ab.decide([0.9, 1.1, 0.95, 1.08], RULE).verdict == ab.UNDECIDED
    assert ab.decide([0.5, 0.5], RULE).verdict == ab.UNDECIDED  # below min_pairs
    one = ab.decide([0.9], RULE)
    assert one.verdict == ab.UNDECIDED and math.isnan(one.low)


def test_the_ci_is_students_t_on_the_log_ratios() -> None:
    # logs of 0.9, 1.0, 1.1: mean -0.0033501, sd 0.1003773; t(0.975, 2) = 4.302653
    d = ab.decide([0.9, 1.0, 1.1], RULE)
    half = 4.302653 * 0.1003773 / math.sqrt(3)
    assert (d.low, d.high) == pytest.approx(
        (math.exp(-0.0033501 - half), math.exp(-0.0033501 + half)), rel=1e-5
    )


@pytest.mark.parametrize(
    "verdicts, result, code",
    [
        ([ab.EQUIVALENT, ab.HIGHER], "no regression", 0),
        ([ab.EQUIVALENT, ab.LOWER, ab.UNDECIDED], "regression", 1),
        ([ab.EQUIVALENT, ab.UNDECIDED], "undecided", 3),
    ],
)
def test_overall_and_exit_codes(verdicts: list[str], result: str, code: int) -> None:
    decisions = [ab.Decision(1.0, 0.9, 1.1, 5, v) for v in verdicts]
    assert ab.overall(decisions) == result and ab.EXIT_CODES[result] == code


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ValueError, match=r"min_effect=1\.5"):
        ab.Rule(min_effect=1.5)
    with pytest.raises(ValueError, match="min_pairs=1"):
        ab.Rule(min_pairs=1)
