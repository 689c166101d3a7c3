"""A run's budget as one pure value: the seconds spent, those kept for later, and whether work fits."""

from __future__ import annotations

import pytest

from harness.formulas.budget import Budget


def test_work_fits_up_to_what_is_kept_for_later() -> None:
    # 600 s, 20 s for the run's end, 30 s for step breakdowns; 500 s spent
    end = Budget(600.0, 500.0, reserve_s=20.0)
    assert end.fits(80.0) and not end.fits(81.0)  # a minimum instance: up to the run's end
    stage = Budget(600.0, 500.0, reserve_s=50.0)
    assert stage.fits(50.0) and not stage.fits(51.0)  # past a minimum, the breakdowns are kept too


def test_work_past_its_minimum_keeps_to_its_share() -> None:
    stage = Budget(1000.0, 600.0, reserve_s=15.0, share=0.7)
    assert stage.until_s == pytest.approx(685.0) and stage.left_s == pytest.approx(85.0)
    assert stage.fits(85.0) and not stage.fits(86.0)
    assert Budget(1000.0, 990.0, 15.0).left_s == pytest.approx(-5.0)  # below 0 once past it


def test_the_chiefs_next_cell_fits_if_the_run_so_far_and_its_longest_cell_do() -> None:
    assert Budget(60.0, 30.0).fits(30.0)  # earlier sessions' 30 s and a cell of 30 s: the minute
    assert not Budget(60.0, 30.0).fits(31.0)
