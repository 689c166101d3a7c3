"""Where a run's wall time went: phases summed over instances, the fixed cost per process."""

from __future__ import annotations

import pytest

from harness.contract.columns import flatten
from harness.contract.records import RunInfo
from harness.results.cost import PHASES, RunCost
from harness.results.store import TABLES, _table


def test_phases_add_up_and_the_fixed_cost_is_a_median_over_completed_instances() -> None:
    cost = RunCost()
    # 8 processes: 30 s of which 19 s timed windows -> 11 / 8 per process
    cost.add({"start": 3.0, "calibration": 4.0, "turns": 21.0, "finish": 1.5, "exit": 0.5}, 19.0, 8, True)
    cost.add({"start": 2.0, "calibration": 1.0, "turns": 8.0, "finish": 0.5, "exit": 0.5}, 6.0, 2, True)
    cost.add({"start": 2.0, "calibration": 1.0, "turns": 8.0, "finish": 0.5, "exit": 0.5}, 6.0, 2, True)
    cost.add({"exit": 9.0}, 0.0, 3, False)  # dropped: counted in the phases, not in the median
    cost.peak_s = 5.0
    assert cost.instances == 4 and cost.processes == 15
    assert cost.phases == pytest.approx(
        {"start": 7.0, "calibration": 6.0, "turns": 37.0, "finish": 2.5, "exit": 10.5}
    )
    assert cost.fixed_s_per_process == pytest.approx(3.0)  # median of 11/8, 3.0, 3.0
    run = RunInfo(run_id="r", timestamp="t", suite_version="v")
    row = cost.row(run, None, wall_s=80.0, budget_s=600.0, forked=True)
    _table([flatten(row)], TABLES["costs"].schema)
    assert row.parent_s == pytest.approx(80.0 - 63.0 - 5.0)
    assert sum(getattr(row, f"{p}_s") for p in PHASES) + row.peak_s + row.parent_s == pytest.approx(80.0)
    text = cost.text(80.0)
    assert "4 group instances, 15 processes" in text and "fixed cost 3.0 s per measured process" in text


def test_a_run_without_a_completed_instance_has_no_fixed_cost() -> None:
    cost = RunCost()
    cost.add({"exit": 2.0}, 0.0, 1, False)
    assert cost.fixed_s_per_process is None
    assert cost.row(RunInfo(), None, 2.0, 60.0, False).fixed_s_per_process is None


def test_an_instance_is_estimated_from_its_turns_and_members() -> None:
    cost = RunCost()
    assert cost.instance_s(4) is None
    # first: 4 members, 16 s of turns asked (4 x 2 x 10 x 0.2), 18 s taken
    cost.add({"start": 4.0, "calibration": 2.0, "turns": 18.0, "finish": 1.0}, 16.0, 4, True, 4, 16.0)
    # later: 2 members, 8 s asked, 8.5 s taken
    cost.add({"start": 2.0, "calibration": 1.0, "turns": 8.5, "finish": 0.5}, 7.0, 2, True, 2, 8.0)
    cost.add({"exit": 30.0}, 0.0, 2, False, 2, 8.0)  # dropped: no evidence of an instance's length
    stretch = (18.0 + 8.5) / (16.0 + 8.0)
    per_member = (7.0 + 3.5) / 6  # outside the window turns
    assert cost.instance_s(3, 12.0) == pytest.approx(12.0 * stretch + 3 * per_member)


def test_step_breakdown_processes_are_their_own_line_of_the_costs() -> None:
    cost = RunCost()
    assert cost.breakdown_process_s() is None
    cost.add({"start": 1.0, "turns": 4.0, "finish": 0.5, "exit": 0.5}, 3.5, 2, True, 2, 4.0)
    cost.breakdown_s += [6.0, 8.0]
    assert cost.breakdown_process_s() == 7.0
    row = cost.row(RunInfo(), None, 30.0, 60.0, True)
    assert (row.breakdown_s, row.breakdowns, row.parent_s) == (14.0, 2, pytest.approx(30.0 - 6.0 - 14.0))
    assert "step breakdowns 14 s in 2 processes" in cost.text(30.0)
