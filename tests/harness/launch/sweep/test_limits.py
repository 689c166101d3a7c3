"""The budget's limits as one pure object: whether another instance may start, and why not."""

from __future__ import annotations

import pytest

from harness.launch.sweep.limits import HEADLINE_SHARE, Limits


def test_a_minimum_instance_may_take_the_budget_up_to_the_runs_end() -> None:
    # 600 s, 20 s for the end, 30 s for step breakdowns; 500 s spent
    limits = Limits(600.0, 500.0, end_s=20.0, breakdowns_s=30.0)
    assert limits.refuses(80.0, minimum=True) == ""  # ends at 580 s: the breakdowns give way
    assert "run's end" in limits.refuses(81.0, minimum=True)
    assert limits.refuses(50.0) == ""  # past a minimum, the breakdowns are kept too: 550 s
    assert "100% of the budget" in limits.refuses(51.0)


def test_a_stage_past_its_minimum_keeps_to_its_share() -> None:
    limits = Limits(1000.0, 600.0, end_s=15.0, breakdowns_s=0.0, share=0.7)
    assert limits.reserve_s == 15.0 and limits.stage_s == pytest.approx(685.0)
    assert limits.refuses(85.0) == "" and "70% of the budget" in limits.refuses(86.0)
    assert limits.left_s == pytest.approx(85.0)
    assert Limits(1000.0, 990.0, 15.0).left_s == 0.0  # never below 0


def test_headline_groups_come_first_within_their_share_of_the_stage() -> None:
    stage = 600.0 - 15.0
    assert Limits(600.0, HEADLINE_SHARE * stage - 1, 15.0).headline_first
    assert not Limits(600.0, HEADLINE_SHARE * stage, 15.0).headline_first
