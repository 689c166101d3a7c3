"""The pure formulas of harness.formulas.turns on literal numbers (worked by hand in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from harness.formulas import turns
from harness.formulas.turns import GroupState, Turn, TurnRatio

NAN = float("nan")
T_3 = 3.182446  # t(0.975, 3)
BAND = math.log(1.05)  # log1p(MIN_EFFECT) = 0.048790


def _abba(block: int, a: tuple[float, float], b: tuple[float, float], work: float = 100.0) -> list[Turn]:
    """An ABBA block of members "A" and "B", equal work per window."""
    return [
        Turn(block, "A", a[0], work),
        Turn(block, "B", b[0], work),
        Turn(block, "B", b[1], work),
        Turn(block, "A", a[1], work),
    ]


TURNS = [
    # block 0, with equal work: log((tA1 + tA2) / (tB1 + tB2)) = log(2.0 / 2.4) = -0.182322; a third
    # member C takes turns too and is ignored
    *_abba(0, (1.0, 1.0), (1.1, 1.3)),
    Turn(0, "C", 5.0, 100.0),
    # block 3 comes before block 1 in the list: log(2.0 / 1.8) = 0.105361
    *_abba(3, (1.0, 1.0), (0.9, 0.9)),
    # block 1, unequal work: B trains 250 examples in 2.0 s and 150 in 1.0 s -> 400 / 3.0 = 133.33/s
    # (not the mean of its windows' 125 and 150/s); A 100 in 1.0 s and 100 in 1.5 s -> 200 / 2.5 =
    # 80/s; log(133.33 / 80) = log(1.666667) = 0.510826
    Turn(1, "A", 1.0, 100.0),
    Turn(1, "B", 2.0, 250.0),
    Turn(1, "B", 1.0, 150.0),
    Turn(1, "A", 1.5, 100.0),
    # block 2: only A (B's turns were lost), skipped
    Turn(2, "A", 1.0, 100.0),
    Turn(2, "A", 1.0, 100.0),
]


def test_block_log_ratios_by_hand() -> None:
    logs = turns.block_log_ratios(TURNS, "B", "A")
    assert logs == pytest.approx([-0.182322, 0.510826, 0.105361], abs=1e-6)
    assert turns.block_log_ratios(TURNS, "A", "B") == pytest.approx([-x for x in logs])


def test_instance_log_ratio_is_the_mean_of_its_blocks() -> None:
    # (-0.182322 + 0.510826 + 0.105361) / 3 = 0.144622
    assert turns.instance_log_ratio(TURNS, "B", "A") == pytest.approx(0.144622, abs=1e-6)
    assert math.isnan(turns.instance_log_ratio(TURNS, "B", "D"))
    assert turns.block_log_ratios([], "B", "A") == []


def test_block_log_ratios_refuse_a_side_without_work_or_time() -> None:
    with pytest.raises(ValueError, match="'B' in block 0"):
        turns.block_log_ratios(_abba(0, (1.0, 1.0), (0.0, 0.0)), "B", "A")
    with pytest.raises(ValueError, match="two members"):
        turns.block_log_ratios(TURNS, "A", "A")


LOGS = [0.10, 0.06, 0.08, 0.12]


def test_turn_ratio_ci_is_a_student_t_over_instances() -> None:
    # mean 0.09, deviations +-0.01, +-0.03: sd sqrt(0.002 / 3) = 0.0258199; half = 3.182446 x
    # 0.0258199 / 2 = 0.0410852 -> exp(0.09) = 1.094174, [exp(0.0489148), exp(0.1310852)]
    r = turns.turn_ratio(LOGS)
    assert r.value == pytest.approx(1.094174, rel=1e-6)
    assert (r.low, r.high) == pytest.approx((1.050131, 1.140065), rel=1e-6)
    half = sps.t.ppf(0.975, 3) * 0.0258199 / 2
    assert r.low == pytest.approx(math.exp(0.09 - half), rel=1e-6)
    assert r.instances == 4 and r.scale == 1.0
    assert r.sd_between == pytest.approx(0.0258199, rel=1e-5)
    assert math.isnan(r.sd_within)


def test_turn_ratio_p_value_is_the_one_sample_t_test() -> None:
    r = turns.turn_ratio(LOGS)
    assert r.p_value == pytest.approx(sps.ttest_1samp(LOGS, 0.0).pvalue, rel=1e-9)
    assert r.p_value == pytest.approx(0.0060568, rel=1e-4)
    wide = [0.05, -0.02, 0.08]
    assert turns.turn_ratio(wide).p_value == pytest.approx(sps.ttest_1samp(wide, 0.0).pvalue, rel=1e-9)


def test_turn_ratio_with_zero_spread_has_an_exact_p_value() -> None:
    assert turns.turn_ratio([0.1, 0.1]).p_value == 0.0
    assert turns.turn_ratio([0.0, 0.0]).p_value == 1.0


def test_sd_within_pools_the_blocks_of_every_instance() -> None:
    # squares about each instance's mean: 0.01 + 0 + 0.01 = 0.02, then 0.0025 x 2 = 0.005; the one-
    # block instance adds nothing; dof 2 + 1 -> sqrt(0.025 / 3) = 0.0912871
    r = turns.turn_ratio([0.2, 0.05, 0.5], within=[[0.1, 0.2, 0.3], [0.0, 0.1], [0.5]])
    assert r.sd_within == pytest.approx(0.0912871, rel=1e-6)
    assert math.isnan(turns.turn_ratio([0.1, 0.2], within=[[0.1], [0.2]]).sd_within)


def test_too_few_instances_give_no_ci_and_non_finite_ones_are_dropped() -> None:
    one = turns.turn_ratio([0.1, NAN])
    assert one.instances == 1 and one.value == pytest.approx(math.exp(0.1))
    assert all(math.isnan(v) for v in (one.low, one.high, one.sd_between, one.p_value))
    assert one.verdict() == "undecided" and not one.decided()
    none = turns.turn_ratio([])
    assert none.instances == 0 and math.isnan(none.value)


@pytest.mark.parametrize(
    "ratio, verdict, decided",
    [
        (TurnRatio(1.20, 1.10, 1.30, 4, 0.05, NAN, 0.001), "higher", True),
        (TurnRatio(0.80, 0.70, 0.90, 4, 0.05, NAN, 0.001), "lower", True),
        # CI inside [1/1.05, 1.05] = [0.952381, 1.05]: equivalent, decided
        (TurnRatio(1.01, 0.96, 1.04, 4, 0.02, NAN, 0.4), "equivalent", True),
        # CI excludes 1 but the ratio is within 5 %, and the CI reaches past 1.05: undecided
        (TurnRatio(1.03, 1.01, 1.06, 4, 0.02, NAN, 0.01), "undecided", False),
        # CI reaches 1 and past 1.05: undecided
        (TurnRatio(1.20, 0.95, 1.50, 4, 0.2, NAN, 0.1), "undecided", False),
        # CI wholly below 1 (0.995): lower than 1 yet not beyond the band: undecided, not "the same"
        (TurnRatio(0.64, 0.41, 0.995, 2, 0.2, NAN, 0.04), "lower", True),
        (TurnRatio(0.97, 0.94, 0.995, 4, 0.02, NAN, 0.04), "undecided", False),
    ],
)
def test_verdicts_and_decided(ratio: TurnRatio, verdict: str, decided: bool) -> None:
    assert ratio.verdict() == verdict
    assert ratio.decided() is decided


def test_min_effect_moves_the_band() -> None:
    r = TurnRatio(1.03, 1.01, 1.06, 4, 0.02, NAN, 0.01)
    assert r.verdict(min_effect=0.02) == "higher"
    assert r.decided(min_effect=0.10)  # [1.01, 1.06] lies inside [1/1.1, 1.1]


def test_scale_multiplies_every_end_and_verdicts_judge_the_unscaled_ratio() -> None:
    # scaling efficiency of 2 devices: speed-ups 1.7, 1.8, 1.9 (geometric mean 1.798146), times 1/2
    logs = [math.log(1.7), math.log(1.8), math.log(1.9)]
    plain, scaled = turns.turn_ratio(logs), turns.turn_ratio(logs, scale=0.5)
    assert scaled.value == pytest.approx(0.5 * plain.value)
    assert scaled.value == pytest.approx(0.899073, abs=1e-6)
    assert (scaled.low, scaled.high) == pytest.approx((0.5 * plain.low, 0.5 * plain.high))
    assert scaled.p_value == plain.p_value and scaled.scale == 0.5
    assert scaled.verdict() == "higher" and scaled.decided()  # 1.8 x faster than 1 device
    same = turns.turn_ratio([math.log(1.04), math.log(1.03), math.log(1.035)], scale=0.5)
    assert same.value == pytest.approx(0.5175, abs=1e-4)
    assert same.verdict() == "equivalent"  # a speed-up within 5 % of 1: no faster than 1 device
    with pytest.raises(ValueError, match="scale"):
        turns.turn_ratio(logs, scale=0.0)


def test_benjamini_hochberg_textbook() -> None:
    # m = 4, thresholds k x 0.05 / 4 = 0.0125, 0.025, 0.0375, 0.05; sorted 0.005, 0.01, 0.03, 0.04
    # each under its threshold: all rejected
    assert turns.benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == [True] * 4
    # step-up: 0.03 > 0.025 at rank 2, but 0.034 <= 0.0375 at rank 3 rejects the three smallest
    assert turns.benjamini_hochberg([0.2, 0.034, 0.001, 0.03]) == [False, True, True, True]
    # none under its threshold
    assert turns.benjamini_hochberg([0.04, 0.06]) == [False, False]
    assert turns.benjamini_hochberg([]) == []


def test_benjamini_hochberg_ignores_nan_p_values() -> None:
    # m' = 2 finite p-values: 0.02 <= 1 x 0.05 / 2 and 0.05 <= 2 x 0.05 / 2, both rejected (had the
    # NaNs counted, m = 4: 0.02 > 0.0125 and 0.05 > 0.025, none)
    assert turns.benjamini_hochberg([NAN, 0.05, NAN, 0.02]) == [False, True, False, True]
    with pytest.raises(ValueError, match="between 0 and 1"):
        turns.benjamini_hochberg([1.5])
    with pytest.raises(ValueError, match="q="):
        turns.benjamini_hochberg([0.01], q=0.0)


def _step_up(p_values: list[float], q: float) -> list[bool]:
    """Benjamini-Hochberg as the module doc writes it (the hand-written version scipy replaced):
    the k smallest of the m' finite p-values for the largest k with p_(k) <= k q / m'."""
    finite = sorted((p, i) for i, p in enumerate(p_values) if math.isfinite(p))
    m = len(finite)
    k = max((rank for rank, (p, _) in enumerate(finite, start=1) if p <= rank * q / m), default=0)
    return [i in {j for _, j in finite[:k]} for i in range(len(p_values))]


P_VALUES = st.lists(st.one_of(st.floats(0.0, 1.0), st.just(NAN)), max_size=300)


@settings(max_examples=300, deadline=None)
@given(P_VALUES, st.floats(1e-6, 1.0))
def test_benjamini_hochberg_is_the_step_up_procedure(p_values: list[float], q: float) -> None:
    # scipy adjusts p_(k) * m' / k and compares with q; the step-up compares p_(k) with k q / m':
    # the same but for rounding when p_(k) is within an ulp of its threshold
    finite = sorted(p for p in p_values if math.isfinite(p))
    m = len(finite)
    assume(all(not math.isclose(p, k * q / m, rel_tol=1e-12) for k, p in enumerate(finite, start=1)))
    assert turns.benjamini_hochberg(p_values, q) == _step_up(p_values, q)


LOG_RATIOS = st.floats(-1.0, 1.0).filter(lambda v: v == 0 or abs(v) > 1e-100)
"""Log ratios, kept clear of underflow (where a mean or an sd of 1e-320 rounds to 0)."""


def _t_test(logs: list[float]) -> float:
    """The two-sided one-sample t-test of mean 0 as the module doc writes it (the hand-written
    version scipy replaced)."""
    n, mean, sd = len(logs), float(np.mean(logs)), float(np.std(logs, ddof=1))
    if sd == 0:
        return 1.0 if mean == 0 else 0.0
    return 2 * float(sps.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))


@settings(max_examples=300, deadline=None)
@given(st.lists(LOG_RATIOS, min_size=2, max_size=300))
def test_turn_ratio_p_value_is_the_t_test_by_formula(logs: list[float]) -> None:
    # equal values: exactly 0 or 1 (the formula's sd of equal values can be an ulp above 0)
    assume(min(logs) != max(logs))
    assert turns.turn_ratio(logs).p_value == pytest.approx(_t_test(logs), rel=1e-9, abs=1e-300)


def test_fdr_verdicts() -> None:
    ratios = [
        TurnRatio(1.20, 1.10, 1.30, 4, 0.05, NAN, 0.001),  # rank 1: rejected, higher
        TurnRatio(0.90, 0.82, 0.99, 4, 0.05, NAN, 0.04),  # alone "lower", but 0.04 > 3 x 0.05 / 5
        TurnRatio(1.03, 1.01, 1.045, 4, 0.01, NAN, 0.01),  # rank 2: rejected, but within 5 %
        TurnRatio(0.85, 0.75, 0.96, 4, 0.05, NAN, 0.049),
        TurnRatio(1.00, 0.90, 1.10, 4, 0.05, NAN, 0.3),
        TurnRatio(1.10, NAN, NAN, 1, NAN, NAN, NAN),
    ]
    assert [r.verdict() for r in ratios][:4] == ["higher", "lower", "equivalent", "lower"]
    # the control holds back the two lowers (undecided, never equivalent); the CI inside the band
    # stays equivalent; no CI: undecided
    assert turns.fdr_verdicts(ratios) == [
        "higher",
        "undecided",
        "equivalent",
        "undecided",
        "undecided",
        "undecided",
    ]
    # at q = 0.25 every finite p-value up to 0.049 passes (0.049 <= 4 x 0.25 / 5)
    assert turns.fdr_verdicts(ratios, q=0.25)[:4] == ["higher", "lower", "equivalent", "lower"]
    # no instance at all: not measured (never "equivalent", which is a finding)
    assert turns.fdr_verdicts([TurnRatio(NAN, NAN, NAN, 0, NAN, NAN, NAN)]) == ["not measured"]


def test_instances_to_decide_by_hand() -> None:
    # mean 0, sd 0.028284: decides "same" at half-width <= log 1.05 = 0.048790; t(2) x 0.028284 /
    # sqrt 3 = 0.070263 is too wide, t(3) x 0.028284 / 2 = 0.045007 is not -> 4
    assert turns.instances_to_decide([-0.02, 0.02]) == 4
    # mean 0.15 >= 0.048790: decides "different" once the CI excludes 1, half-width < 0.15; sd
    # 0.070711, t(3) x 0.070711 / 2 = 0.112518 -> 4
    assert turns.instances_to_decide([0.10, 0.20]) == 4
    # the measured A/A pair 1.024, 0.971: mean -0.002856, sd 0.037579, d = 0.045934; t(4) x 0.037579 /
    # sqrt 5 = 0.046658, t(5) x 0.037579 / sqrt 6 = 0.039437 -> 6 instances
    assert turns.instances_to_decide([math.log(1.024), math.log(0.971)]) == 6


def test_instances_to_decide_agrees_with_decided() -> None:
    m, s = 0.15, 0.070711
    a = s * math.sqrt(3) / 2  # 4 values m -+ a have sd s
    assert not turns.turn_ratio([m - s, m, m + s]).decided()
    assert turns.turn_ratio([m - a, m - a, m + a, m + a]).decided()


def test_instances_to_decide_grows_with_spread() -> None:
    counts = [turns.instances_to_decide([0.02 - w, 0.02 + w]) for w in (0.005, 0.01, 0.02, 0.04)]
    assert all(isinstance(n, int) for n in counts)
    assert counts == sorted(counts) and counts[0] < counts[-1]


def test_instances_to_decide_edges() -> None:
    assert turns.instances_to_decide([0.1]) is None
    assert turns.instances_to_decide([0.1, NAN]) is None
    assert turns.instances_to_decide([0.01, -0.01], min_effect=0.0) is None  # d = 0: never decided
    assert turns.instances_to_decide([0.1, 0.1, 0.1]) == 3  # no spread: decided now
    assert turns.instances_to_decide([0.2, 0.21, 0.19, 0.2, 0.2]) == 5  # already decided: the count


DIFFERENT = (0.20, 0.21, 0.19)  # half-width 0.0248, CI excludes 1, beyond 5 %: decided
SAME_ = (0.0, 0.01, -0.01)  # CI within +-0.0248: decided
NARROW = (0.03, 0.05, 0.04)  # mean 0.04, half-width 0.0248: 0.0648 > 0.0488, undecided; width 0.51
WIDE = (0.1, -0.1, 0.0)  # half-width 0.2484: undecided; width 5.09


def test_next_group_fills_min_instances_first_fewest_first() -> None:
    states = [
        GroupState("g0", 3, 10.0, (WIDE,)),
        GroupState("g1", 1, 10.0, ((0.1,),)),
        GroupState("g2", 1, 10.0, ((0.1,),)),
        GroupState("g3", 0, 10.0, ()),
    ]
    assert turns.next_group(states) == 3
    assert turns.next_group(states[:3]) == 1  # tie on 1 instance: the first
    # then the widest undecided: one instance gives no CI, an infinitely wide one
    assert turns.next_group(states[:3], min_instances=1) == 1
    assert turns.next_group(states[:1], min_instances=1) == 0


def test_next_group_serves_the_headline_first_while_it_is_undecided() -> None:
    states = [
        GroupState("g0", 1, 10.0, ((0.1,),)),
        GroupState("h0", 1, 10.0, ((0.1,),)),
        GroupState("g1", 3, 10.0, (WIDE,)),
        GroupState("h1", 3, 10.0, (NARROW,)),
    ]
    assert turns.next_group(states, first={1, 3}) == 1  # its minimum before g0's
    assert turns.next_group(states[2:], first={1}) == 1  # narrower, but the headline's
    decided = [states[2], GroupState("h1", 3, 10.0, (DIFFERENT,))]
    assert turns.next_group(decided, first={1}) == 0  # a decided headline leaves the rest


def test_next_group_serves_a_likely_decidable_headline_before_any_other_extra_instance() -> None:
    # NARROW: mean 0.04, sd 0.01, d = 0.048790 - 0.04 = 0.008790; t(7) x 0.01 / sqrt 8 = 0.008360
    # (t(6) x 0.01 / sqrt 7 = 0.009249) -> 8 instances, 5 more than its 3
    assert turns.instances_to_decide(NARROW) == 8
    states = [GroupState("g0", 3, 10.0, (WIDE,)), GroupState("h0", 3, 10.0, (NARROW,))]
    # likely decidable: first, though narrower and past the headline's share of the budget
    assert turns.next_group(states, first={1}, first_while_open=False) == 1
    assert turns.next_group(states, max_instances=8, first={1}, first_while_open=False) == 1  # 5 left
    # 5 more than the 4 left up to max_instances 7: first only in the headline's share
    assert turns.next_group(states, max_instances=7, first={1}, first_while_open=False) == 0
    assert turns.next_group(states, max_instances=7, first={1}) == 1
    assert turns.next_group(states, first_while_open=False) == 0  # no headline: the widest
    # every group's minimum still comes first
    short = [GroupState("g0", 2, 10.0, (WIDE,)), states[1]]
    assert turns.next_group(short, first={1}, first_while_open=False) == 0


def test_next_group_keeps_a_comparison_open_while_its_ci_is_wider_than_its_target() -> None:
    # (0.20, 0.25, 0.15): mean 0.2, sd 0.05, h = t(2) x 0.05 / sqrt 3 = 4.302653 x 0.028868 =
    # 0.124207: decided (higher), but (high - low) / value = 2 sinh(0.124207) = 0.249053 wide
    decided_wide = (0.20, 0.25, 0.15)
    assert turns.turn_ratio(decided_wide).decided()
    assert turns.relative_width(decided_wide) == pytest.approx(0.249053, abs=1e-6)
    assert turns.relative_width((0.2,)) == math.inf
    comps = (decided_wide, DIFFERENT)
    assert turns.next_group([GroupState("h0", 3, 10.0, comps)]) is None  # no target: decided
    assert turns.next_group([GroupState("h0", 3, 10.0, comps, (0.10, None))]) == 0
    assert turns.next_group([GroupState("h0", 3, 10.0, comps, (0.30, None))]) is None
    assert turns.next_group([GroupState("h0", 3, 10.0, comps, (0.10, None))], max_instances=3) is None
    # DIFFERENT is 2 sinh(0.024842) = 0.049688 wide
    assert turns.next_group([GroupState("h0", 3, 10.0, comps, (None, 0.04))]) == 0
    # open for its target: first while 7 instances (t(6) x 0.05 / sqrt 7 = 0.0462 <= asinh(0.05))
    # would likely narrow it and are within reach; else only with first_while_open, else the widest
    assert turns.instances_to_narrow(decided_wide, 0.10) == 7
    assert turns.instances_to_narrow((0.2,), 0.10) is None
    states = [GroupState("g0", 3, 10.0, (WIDE,)), GroupState("h0", 3, 10.0, comps, (0.10, None))]
    assert turns.next_group(states, first={1}) == 1
    assert turns.next_group(states, first={1}, first_while_open=False) == 1
    assert turns.next_group(states, max_instances=5, first={1}, first_while_open=False) == 0
    assert turns.next_group(states, max_instances=5, first={1}) == 1
    with pytest.raises(ValueError, match="1 targets for 2 comparisons"):
        GroupState("h0", 3, 10.0, comps, (0.10,))


def test_next_group_picks_the_widest_undecided_comparison() -> None:
    states = [
        GroupState("decided", 3, 10.0, (DIFFERENT, SAME_)),
        GroupState("narrow", 3, 10.0, (SAME_, NARROW)),
        GroupState("wide", 3, 10.0, (WIDE, DIFFERENT)),
    ]
    assert turns.next_group(states) == 2
    assert turns.next_group(states[:2]) == 1
    assert turns.next_group(states[:1]) is None
    assert turns.next_group([]) is None


def test_next_group_breaks_ties_by_fewer_instances_then_order() -> None:
    states = [
        GroupState("a", 5, 10.0, (WIDE,)),
        GroupState("b", 4, 10.0, (WIDE,)),
        GroupState("c", 4, 10.0, (WIDE,)),
    ]
    assert turns.next_group(states) == 1


def test_next_group_respects_max_instances() -> None:
    states = [
        GroupState("narrow", 3, 10.0, (NARROW,)),
        GroupState("wide", 6, 10.0, (WIDE,)),
    ]
    assert turns.next_group(states, max_instances=6) == 0
    assert turns.next_group(states, max_instances=3) is None
    # max_instances wins over min_instances
    assert turns.next_group([GroupState("g", 2, 10.0, ())], min_instances=3, max_instances=2) is None
    with pytest.raises(ValueError, match="max_instances"):
        turns.next_group(states, max_instances=0)


def test_a_block_with_a_disturbed_turn_is_left_out_whole() -> None:
    from harness.formulas.turns import DISTURBED, clean, disturbed_blocks

    quiet = [Turn(0, "a", 0.2, 100.0, 0.0), Turn(0, "b", 0.2, 120.0, 0.01)]
    busy = [Turn(1, "a", 0.2, 60.0, 0.0), Turn(1, "b", 0.3, 80.0, 0.3 * (DISTURBED + 0.5))]
    turns = quiet + busy
    assert clean(turns) == quiet and disturbed_blocks(turns) == 1
    assert busy[1].disturbance == pytest.approx(DISTURBED + 0.5)
    assert clean(turns, limit=10.0) == turns


def test_the_limit_on_other_programs_scales_with_the_idle_cpus() -> None:
    from harness.formulas.turns import DISTURBED, foreign_limit

    assert foreign_limit(0.0) == foreign_limit(1.0) == foreign_limit(NAN) == DISTURBED
    assert foreign_limit(14.0) == pytest.approx(3.5)


def test_only_another_program_disturbs_a_turn_while_the_host_has_cpus_to_spare() -> None:
    from harness.formulas.turns import is_disturbed

    def turn(other: float = 0.0, run: float = 0.0, idle: float = NAN, foreign: float = NAN) -> Turn:
        return Turn(0, "A", 0.2, 100.0, other, run, idle, foreign_cpu_s=foreign)

    # 0.2 s turns. Another program used 0.06 s = 0.3 CPUs > 0.25 with 0.3 CPUs idle (the 2-core
    # VM): disturbed. With 13 idle (the 16-core GPU host) the limit is 0.25 x 13 = 3.25 CPUs: 0.3
    # took nothing from the member (the H200's 3 dropped blocks); 3.5 (0.7 s) disturbs
    assert is_disturbed(turn(other=0.06, idle=0.3, foreign=0.06))
    assert not is_disturbed(turn(other=0.06, idle=13.0, foreign=0.06))
    assert is_disturbed(turn(other=0.7, idle=13.0, foreign=0.7))
    # the kernel (0.10 s) and the waiting members (0.06 s) used 0.8 CPUs, no other program: with
    # 13 CPUs idle (the 16-core GPU host) they took nothing from the member; with 0.3 idle (the
    # 2-core VM) they did
    assert not is_disturbed(turn(other=0.10, run=0.06, idle=13.0, foreign=0.0))
    assert is_disturbed(turn(other=0.10, run=0.06, idle=0.3, foreign=0.0))
    assert not is_disturbed(turn(other=0.02, run=0.02, idle=0.3, foreign=0.0))  # 0.2 CPUs: below
    # a turn of an old journal (nothing split, idle unknown): the old rule on everything but the member
    assert is_disturbed(turn(other=0.06))
    assert not is_disturbed(turn(other=0.04))


def test_a_summary_counts_the_blocks_each_rule_keeps_and_names_the_busiest_program() -> None:
    from harness.formulas.turns import busiest_other, summarize

    def turn(block: int, other: float, foreign: float = 0.0, busiest: str = "") -> Turn:
        return Turn(block, "A", 0.2, 100.0, other, 0.0, 1.0, busiest, foreign, foreign)

    # 0.2 s turns on a host with 1 CPU idle: only other programs count, past 0.25 CPUs
    first = [turn(0, 0.1), turn(1, 0.0), turn(1, 0.1, 0.09, "xz[7]")]
    second = [turn(0, 0.0), turn(1, 0.12, 0.11, "xz[8]"), turn(2, 0.06)]
    s = summarize([first, second])
    # 5 blocks; disturbed: instance 1 block 1 and instance 2 block 1 (xz: 0.45 and 0.55 CPUs)
    assert (s.blocks, s.kept) == (5, 3)
    # medians over the 6 turns: other programs [0, 0, .45, 0, .55, 0] -> 0; besides the member
    # [.5, 0, .5, 0, .6, .3] -> 0.4
    assert s.median_foreign == 0.0 and s.median_besides == pytest.approx(0.4)
    # xz used 0.20 s over the disturbed turns' 0.4 s: 0.5 CPUs
    assert busiest_other(first + second) == ("xz[8]", pytest.approx(0.5))
    assert busiest_other(first[:2]) == ("", 0.0)
