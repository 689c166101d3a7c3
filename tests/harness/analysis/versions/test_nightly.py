"""nightly's two decisions on literal series and the overall verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.analysis.versions import nightly as nightly_module
from harness.analysis.versions.nightly import (
    EXIT_CODES,
    REGRESSION,
    REVERTED,
    UNDECIDED,
    Night,
    Rules,
    change_point,
    judge,
    night_of,
    overall,
    tonight,
)
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER

RULES = Rules()


def night(ratio: float, se: float = 0.004, pairs: int = 20, label: str = "n") -> Night:
    return Night(label, math.log(ratio), se, pairs)


def series(ratios: list[float], se: float = 0.004) -> list[Night]:
    return [night(r, se, label=f"n{i}") for i, r in enumerate(ratios)]


# small alternating noise: no change anywhere
QUIET = [1.0, 1.003, 0.998, 1.001, 0.997, 1.002, 0.999, 1.004, 0.996, 1.0]


def test_night_of_is_the_geometric_mean_with_its_standard_error() -> None:
    n = night_of("x", [0.9, 1.0, 1.1])
    logs = np.log([0.9, 1.0, 1.1])
    assert n.ratio == pytest.approx(math.exp(logs.mean()))
    assert n.se == pytest.approx(logs.std(ddof=1) / math.sqrt(3))
    assert n.pairs == 3
    assert math.isnan(night_of("x", [1.0]).se) and night_of("x", []).pairs == 0


@pytest.mark.parametrize(
    "ratio, se, verdict",
    [
        (0.95, 0.004, LOWER),
        (1.05, 0.004, HIGHER),
        (1.0, 0.004, EQUIVALENT),
        (0.975, 0.004, UNDECIDED),  # the CI straddles 0.98
        (0.99, 0.05, UNDECIDED),  # too wide to say
    ],
)
def test_the_first_night_is_judged_against_the_reference(ratio: float, se: float, verdict: str) -> None:
    change = tonight([], night(ratio, se), RULES)
    assert change.verdict == verdict
    assert change.baseline == ()
    assert change.ratio == pytest.approx(ratio)


def test_a_night_is_judged_against_its_baselines_level_not_the_reference() -> None:
    # a candidate steadily 4 % slower than the reference: no change tonight
    change = tonight(series([0.96, 0.961, 0.959]), night(0.96), RULES)
    assert change.verdict == EQUIVALENT
    assert change.ratio == pytest.approx(1.0, abs=0.002)
    assert change.baseline == ("n0", "n1", "n2")


def test_the_nights_scatter_beyond_their_own_errors_widens_the_ci() -> None:
    tight = tonight(series([1.0, 1.0, 1.0, 1.0]), night(0.97), RULES)
    scattered = tonight(series([1.02, 0.98, 1.02, 0.98]), night(0.97), RULES)
    assert scattered.high - scattered.low > 2 * (tight.high - tight.low)


def test_one_pair_is_undecided() -> None:
    assert tonight([], Night("x", math.log(0.8), math.nan, 1), RULES).verdict == UNDECIDED


def test_a_step_is_an_alarm_on_its_night_only_and_the_change_point_confirms_it() -> None:
    verdicts = judge(series(QUIET + [0.95, 0.951, 0.949, 0.95, 0.952]), RULES)
    assert [v.alarms for v in verdicts[:10]] == [()] * 10
    assert verdicts[10].alarms == (REGRESSION,)
    assert all(v.change.verdict == EQUIVALENT for v in verdicts[11:])  # its night starts the baseline
    found = [v.change_point for v in verdicts if v.change_point is not None]
    assert len(found) == 1
    cp = found[0]
    assert cp.label == "n10" and cp.direction == REGRESSION and not cp.new
    assert cp.shift == pytest.approx(0.95, abs=0.003) and cp.p <= RULES.alpha
    assert all(v.alarms == () for v in verdicts[11:])


def test_a_small_step_below_rule_a_is_found_by_the_change_point_as_a_new_alarm() -> None:
    verdicts = judge(series(QUIET + [0.985, 0.986, 0.984, 0.985, 0.986]), RULES)
    assert all(v.change.verdict != LOWER for v in verdicts)
    first = next(i for i, v in enumerate(verdicts) if v.change_point is not None)
    cp = verdicts[first].change_point
    assert cp is not None and cp.label == "n10" and cp.new
    assert verdicts[first].alarms == (REGRESSION,)
    assert first >= 10 + RULES.min_side - 1  # it needs min_side nights after the change
    assert overall([verdicts[first]], RULES) == "regression"


def test_a_drift_of_one_percent_a_night_is_a_change_point_within_eight_nights() -> None:
    drift = [0.99 ** (j + 1) for j in range(8)]
    verdicts = judge(series(QUIET + drift), RULES)
    nights = [
        i - 9 for i, v in enumerate(verdicts) if v.change_point and v.change_point.direction == REGRESSION
    ]
    assert nights and nights[0] <= 8


def test_a_shift_below_min_shift_is_not_reported() -> None:
    assert change_point([math.log(r) for r in QUIET + [0.995] * 6], RULES) is None


def test_no_change_point_in_a_quiet_series_or_a_short_one() -> None:
    assert change_point([math.log(r) for r in QUIET * 3], RULES) is None
    assert change_point([0.0, 0.1, 0.2, 0.3, 0.4], RULES) is None  # fewer than 2 x min_side nights


def test_change_point_is_deterministic() -> None:
    x = [math.log(r) for r in QUIET + [0.98, 0.981, 0.979, 0.98]]
    assert change_point(x, RULES) == change_point(x, RULES)


def test_change_points_false_alarm_rate_is_at_most_alpha_on_exchangeable_nights() -> None:
    rules = Rules(alpha=0.05, permutations=999, min_shift=0.0)
    rng = np.random.default_rng(3)
    found = sum(change_point(rng.normal(0, 0.01, 12).tolist(), rules) is not None for _ in range(400))
    assert found / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


def test_overall_and_exit_codes() -> None:
    quiet = judge(series(QUIET), RULES)[-1]
    slow = judge(series([0.95]), RULES)[-1]
    wide = judge([Night("w", 0.0, 0.05, 5)], RULES)[-1]
    up = judge([Night("u", math.log(1.015), 0.006, 20)], RULES)[-1]  # straddles 1.02 only
    assert up.change.verdict == UNDECIDED
    assert overall([quiet], RULES) == "no regression" and EXIT_CODES[overall([quiet], RULES)] == 0
    assert overall([quiet, up], RULES) == "no regression"  # no regression of 2 % is possible
    assert overall([quiet, slow], RULES) == "regression" and EXIT_CODES["regression"] == 1
    assert overall([quiet, wide], RULES) == "undecided" and EXIT_CODES["undecided"] == 3
    assert overall([slow], RULES, failed=1) == "a cell failed" and EXIT_CODES["a cell failed"] == 1
    assert overall([], RULES) == "undecided"


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"min_effect": 0}, "min_effect=0"),
        ({"alpha": 0.7}, "alpha=0.7"),
        ({"alpha": 0.0001}, "permutations=4999"),
        ({"min_side": 1}, "min_side=1"),
    ],
)
def test_bad_rules_are_named(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        Rules(**kwargs)  # type: ignore[arg-type]


def test_a_one_night_glitch_is_reverted_not_a_second_alarm() -> None:
    verdicts = judge(series(QUIET + [0.95, 1.0, 1.002, 0.999]), RULES)
    assert verdicts[10].alarms == (REGRESSION,)
    assert verdicts[11].change.verdict == REVERTED and verdicts[11].alarms == ()
    assert "n10" not in verdicts[11].change.baseline  # back to the level before the glitch
    assert all(v.change.verdict == EQUIVALENT and v.alarms == () for v in verdicts[12:])


def test_a_change_point_one_night_after_rule_as_alarm_is_not_new() -> None:
    # rule (a) flags night 10 (a 3.5 % step); the split may be estimated at night 10 or 11
    ratios = QUIET + [0.965, 0.966, 0.964, 0.965, 0.966, 0.965]
    found = [v.change_point for v in judge(series(ratios), RULES) if v.change_point]
    assert found and all(not cp.new for cp in found)


def test_bad_pair_ratios_are_refused_and_a_nan_night_finds_no_change_point() -> None:
    with pytest.raises(ValueError, match="finite and positive"):
        night_of("x", [1.0, 0.0])
    assert change_point([math.log(r) for r in QUIET] + [math.nan] * 4, RULES) is None


def test_the_early_stop_decides_as_the_full_permutation_test(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = Rules(alpha=0.05, permutations=999, min_shift=0.0)
    rng = np.random.default_rng(11)
    cases = [
        rng.normal(0, 0.01, 12) + np.r_[np.zeros(8), np.full(4, s)] for s in (0.0, 0.006, 0.01, 0.02)
    ] * 5
    early = [change_point(list(x), rules) is not None for x in cases]
    monkeypatch.setattr(nightly_module, "BATCH", rules.permutations)  # one batch: the full test
    full = [change_point(list(x), rules) is not None for x in cases]
    assert early == full and any(full) and not all(full)
