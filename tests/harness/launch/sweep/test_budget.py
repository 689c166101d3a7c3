"""A run in turns spending its budget, with fake instances (no process, no TensorFlow): minimum
instances first, then the least decided groups, the budget's end, the race of the tied, a member
that fails leaving its group, and the rows and ratios written."""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from harness.contract.columns import Estimate
from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import Breakdown, Machine, Status
from harness.errors import HarnessError
from harness.formulas import turns
from harness.formulas.turns import Turn
from harness.launch.cells.peak import PeakLog
from harness.launch.cells.progress import Progress
from harness.launch.cells.runner import CellEnd, RunState, run_cell_processes
from harness.launch.instances.breakdowns import Apart
from harness.launch.instances.turns import Instance
from harness.launch.sweep import budget, group_run, limits
from harness.launch.sweep.run_params import Hooks, Output, Work
from harness.results.measurement import cell_row
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

pytestmark = pytest.mark.usefixtures("no_git")

ONE = Cell(model="dense", strategy="mirrored", replicas=1, batch=32)
TWO = Cell(model="dense", strategy="mirrored", replicas=2, batch=32)
DEFAULT = Cell(model="dense", strategy="default", batch=32)


class Clock:
    """A fake monotonic clock that each fake instance moves on by its wall seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _end(cell: Cell, protocol: Protocol, eps: float, status: str = "ok", reason: str = "") -> CellEnd:
    event = Event.RECORD if status != "killed" else Event.FAILED
    if event != Event.RECORD:  # a process that died reports no row
        return CellEnd(cell, event, reason=reason)
    row = cell_row(cell, protocol)
    row = dataclasses.replace(
        row,
        status=Status(status),
        reason=reason,
        examples_per_sec=Estimate(eps if status == "ok" else None),
        spread=dataclasses.replace(row.spread, cv_within_process=0.01),
        machine=Machine(fingerprint="fp"),
    )
    window = {
        "cell_id": cell.id,
        "worker": 0,
        "repeat": 0,
        "window_s": 1.0,
        "window_steps": 1,
        "examples": int(eps),
        "examples_per_sec": eps,
    }
    return CellEnd(cell, event, row, windows=[window] if status == "ok" else [], reason=reason)


def _fake(
    monkeypatch: pytest.MonkeyPatch,
    protocol: Protocol,
    clock: Clock,
    speed: dict[str, float],
    noise: float = 0.02,
    fail: str = "",
    oom: bool = False,
    other_cpu_s: float = 0.0,
    busiest: str = "",
) -> list[str]:
    """run_instance replaced: every member at its ``speed`` (examples/s) times a per-instance
    factor that alternates +-noise; ``fail``: that member's process dies in its first instance."""
    calls: list[str] = []

    def fake(group, index, plan, options, launcher, prefix="", steps=None):  # type: ignore[no-untyped-def]
        calls.append(group.name)
        clock.now += 10.0
        instance = Instance(group, index, wall_s=10.0, processes=len(group.members))
        instance.phases = {"start": 1.0, "calibration": 1.0, "turns": 7.0, "finish": 1.0}
        culprit = fail
        if oom and len(group.members) > 1:  # the last member runs out of memory beside the others
            culprit = group.members[-1].key
        for m in group.members:
            if m.key == culprit:
                reason = (
                    "ResourceExhaustedError: OOM when allocating tensor with shape[64,26,26,32]"
                    if oom
                    else "worker exited with signal SIGKILL"
                )
                instance.ends[m.key] = _end(m.cell, protocol, 0, "killed", reason)
                instance.dropped, instance.culprit = "a process closed its channel", m.key
                continue
            wobble = 1 + noise * (1 if (index + len(m.key)) % 2 else -1)
            eps = speed[m.cell.id] * wobble
            instance.ends[m.key] = _end(m.cell, protocol, eps)
            for block in range(plan.blocks):
                turn = Turn(block, m.key, 1.0, eps, other_cpu_s, busiest=busiest, busiest_cpu_s=other_cpu_s)
                instance.turns += [turn, turn]
        if instance.dropped:
            for m in group.members:
                if m.key != culprit:
                    instance.ends[m.key] = _end(m.cell, protocol, 0, "failed", "TurnsClosed: dropped")
        return instance

    monkeypatch.setattr(budget, "run_instance", fake)
    monkeypatch.setattr(budget, "measure_apart", _fake_apart(clock))
    return calls


BROKEN_DOWN = Breakdown(
    parts_step_s=0.010, compute_s=0.007, allreduce_s=0.001, input_s=0.001, dispatch_s=0.0005
)


def _fake_apart(clock: Clock, seconds: float = 5.0):  # type: ignore[no-untyped-def]
    """measure_apart replaced: every cell's parts as :data:`BROKEN_DOWN`, ``seconds`` each."""

    def fake(cell, options, launcher, prefix):  # type: ignore[no-untyped-def]
        clock.now += seconds
        return Apart(cell.id, BROKEN_DOWN, seconds)

    return fake


def _run(tmp_path: Path, protocol: Protocol, clock: Clock, cells: list[Cell]):  # type: ignore[no-untyped-def]
    return budget.run_in_turns(
        Work(tuple(cells), protocol, Platform()),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
    )


def test_every_group_gets_its_minimum_then_the_budget_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=3, max_processes=40, budget_min=2.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    calls = _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0})

    result = _run(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    assert calls[:3] == ["g0"] * 3  # one group (the three cells fit max_live): its minimum first
    assert clock.now <= protocol.budget_s  # never past the budget once the minimum is done
    ratios = {(r.relation, r.subject): r for r in result.ratios}
    scaling = ratios[("scaling", TWO.id)]
    assert scaling.ratio.value == pytest.approx(1.1 / 2, rel=0.02) and scaling.instances == len(calls)
    cells = pd.read_parquet(tmp_path / "results" / "cells").set_index("cell_id")
    assert cells.loc[TWO.id, "scaling_efficiency"] == pytest.approx(scaling.ratio.value)
    assert cells.loc[TWO.id, "ratio_instances"] == len(calls)
    assert cells.loc[TWO.id, "processes"] == len(calls)  # one process per instance it was in
    stored = pd.read_parquet(tmp_path / "results" / "ratios")
    assert set(stored["relation"]) == {"scaling", "strategy"}
    assert stored["verdict"].isin(["higher", "lower", "equivalent", "undecided"]).all()


def test_the_eta_is_the_budget_left_or_the_minimum_left_where_it_takes_longer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one group of 3 members, 10 s an instance on the fake clock, 3 instances at least
    speeds = {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0}
    # after 10 s, 15 s kept for the run's end: of a 30 s budget 5 s are left, less than one
    # instance (the run ends); of a 60 s budget 35 s, or the 2 instances left up to --max-processes 3
    for budget_min, most, first_eta in ((0.5, 3, "0:00"), (1.0, 40, "0:35"), (1.0, 3, "0:20")):
        protocol = Protocol(
            processes=3,
            max_processes=most,
            budget_min=budget_min,
            blocks=2,
            max_live=8,
            peak=False,
            breakdown=False,
        )
        clock = Clock()
        _fake(monkeypatch, protocol, clock, speeds)
        stream = io.StringIO()
        progress = Progress(3, stream=stream, force_terminal=False, clock=clock)
        folder = tmp_path / f"{budget_min}-{most}"
        budget.run_in_turns(
            Work((DEFAULT, ONE, TWO), protocol, Platform()),
            Output(folder),
            hooks=Hooks(clock=clock, progress=progress, peaks=PeakLog(Platform(), ())),
        )
        lines = stream.getvalue().splitlines()
        assert lines[0].endswith(f"ETA {first_eta}"), lines
        assert lines[-1].endswith("ETA 0:00"), lines
        assert clock.now <= protocol.budget_s - budget.CLOSE_S  # the budget holds, its end kept


def test_decided_ratios_stop_the_run_before_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=3, max_processes=40, budget_min=60.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    calls = _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1500.0}, noise=0.001)

    result = _run(tmp_path, protocol, clock, [ONE, TWO])

    assert len(calls) == 3  # decided at the minimum: 1.5x with 0.1% noise
    (scaling,) = result.ratios
    assert scaling.decided and scaling.verdict == "higher" and scaling.extra_instances == 0


def test_a_member_that_fails_leaves_its_group_and_its_row_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=2, max_processes=2, budget_min=5.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    calls = _fake(
        monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1000.0, DEFAULT.id: 900.0}, fail=TWO.id
    )

    result = _run(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    rows = {r.cell.cell_id: r for r in result.rows}
    assert rows[TWO.id].status == "failed" and "SIGKILL" in rows[TWO.id].reason
    # the dropped instance is not counted; the rest: g0's two, and the race's (ONE ties DEFAULT)
    assert rows[ONE.id].status == "ok" and rows[ONE.id].spread.processes == len(calls) - 1
    g0 = [r for r in result.ratios if r.group == "g0"]
    assert [r.relation for r in g0 if not r.note] == ["strategy"]  # TWO's comparisons left
    assert {r.relation for r in g0 if r.note} == {"scaling", "strategy"}
    assert all(TWO.id in r.note and r.ratio.value is None for r in g0 if r.note)


def _race(tmp_path: Path, protocol: Protocol, clock: Clock, cells: list[Cell]):  # type: ignore[no-untyped-def]
    """A run whose every cell is a contender (as every run without a headline is)."""
    return budget.run_in_turns(
        Work(tuple(cells), protocol, Platform(), contenders=tuple(c.id for c in cells)),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
    )


def test_a_race_that_does_not_fit_one_group_ends_in_a_second_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # three contenders, two live at most: DEFAULT and ONE race in h0, TWO against h0's leader in r0
    protocol = Protocol(processes=3, max_processes=6, budget_min=10.0, blocks=2, max_live=2, peak=False)
    clock = Clock()
    speed = {DEFAULT.id: 1000.0, ONE.id: 900.0, TWO.id: 1010.0}
    calls = _fake(monkeypatch, protocol, clock, speed, noise=0.02)

    result = _race(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    assert (
        "h0" in calls
        and "r0" in calls
        and calls.index("r0") > max(i for i, c in enumerate(calls) if c == "h0")
    )
    raced = {(r.subject, r.reference): r for r in result.ratios if r.relation == "fastest"}
    assert set(raced) == {(ONE.id, DEFAULT.id), (TWO.id, DEFAULT.id)}
    assert raced[(TWO.id, DEFAULT.id)].group == "r0" and raced[(TWO.id, DEFAULT.id)].instances >= 3


def test_a_second_stage_the_budget_never_reaches_is_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10 s an instance; 51 s less the 15 s kept for the end: the first stage (0.7 of it) gives
    # h0 and TWO's own group their instances, and r0, estimated from them, does not fit what is left
    protocol = Protocol(processes=1, max_processes=6, budget_min=0.85, blocks=2, max_live=2, peak=False)
    clock = Clock()
    calls = _fake(
        monkeypatch, protocol, clock, {DEFAULT.id: 1000.0, ONE.id: 900.0, TWO.id: 1010.0}, noise=0.2
    )

    result = _race(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    assert "r0" not in calls, calls
    (race,) = [r for r in result.ratios if r.relation == "fastest" and r.subject == TWO.id]
    assert race.instances == 0 and race.ratio.value is None and race.verdict == "not measured"
    assert "budget (0.85 min) was spent before its first instance" in race.note
    assert clock.now <= protocol.budget_s - budget.CLOSE_S


def test_a_comparison_whose_every_block_was_disturbed_is_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=1, max_processes=1, budget_min=60.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0}, other_cpu_s=1.0)

    result = _run(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    assert result.ratios and all(r.verdict == "not measured" for r in result.ratios)
    assert all("every block of its 1 instance(s) was disturbed" in r.note for r in result.ratios)
    assert all(r.disturbed_blocks == 2 for r in result.ratios)


def test_a_disturbed_comparison_names_the_program_that_took_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    protocol = Protocol(processes=1, max_processes=1, budget_min=60.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    speed = {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0}
    _fake(monkeypatch, protocol, clock, speed, other_cpu_s=0.98, busiest="xz[5310]")

    result = _run(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    assert all("busiest other program: xz[5310], 0.98 CPUs" in r.note for r in result.ratios)
    # and while it ran, as each instance ended
    assert "2 of 2 blocks disturbed; busiest other program: xz[5310], 0.98 CPUs" in capsys.readouterr().err


@pytest.mark.parametrize("busy_ok", [False, True])
def test_a_run_that_another_program_keeps_disturbing_stops_unless_asked_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, busy_ok: bool
) -> None:
    protocol = Protocol(
        processes=5, max_processes=5, budget_min=60.0, blocks=2, max_live=8, peak=False, busy_ok=busy_ok
    )
    clock = Clock()
    speed = {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0}
    calls = _fake(monkeypatch, protocol, clock, speed, other_cpu_s=0.98, busiest="yes[4242]")

    result = _run(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])

    if busy_ok:  # every instance the minimum asks for, the ratios not measured
        assert not result.stopped and len(calls) >= 5
        return
    # stopped after the 4th instance (8 blocks, every one disturbed), its rows written
    assert len(calls) == 4 and result.interrupted
    assert result.stopped.startswith("the machine is busy: another program took CPU in 8 of the 8 blocks")
    assert "yes[4242] used 0.98 CPUs" in result.stopped and "--busy-ok" in result.stopped
    assert f"--resume {result.run_id}" in result.stopped
    assert {r.status for r in result.rows} == {"ok"}


def test_members_that_do_not_fit_together_are_measured_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=2, max_processes=2, budget_min=5.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    calls = _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0}, oom=True)

    result = _run(tmp_path, protocol, clock, [ONE, TWO])

    assert calls[0] == "g0" and sorted(calls[1:5]) == ["g0.0", "g0.0", "g0.1", "g0.1"]
    rows = {r.cell.cell_id: r for r in result.rows}
    assert rows[ONE.id].status == rows[TWO.id].status == "ok"  # an OOM together is no failure
    assert rows[TWO.id].efficiency.ratio_instances is None  # efficiency from separate processes
    assert rows[TWO.id].efficiency.scaling_efficiency.value == pytest.approx(0.55, rel=0.05)
    (scaling,) = [r for r in result.ratios if r.relation == "scaling"]
    assert scaling.ratio.value is None and "did not fit in memory together" in scaling.note


def test_the_headline_races_each_contender_against_the_fastest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fit = Cell(model="dense", strategy="default", batch=32, loop="fit")
    other = Cell(model="dense", strategy="default", batch=32, tenants=2)  # no contender
    protocol = Protocol(processes=3, max_processes=6, budget_min=10.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    speeds = {DEFAULT.id: 1000.0, ONE.id: 900.0, TWO.id: 1500.0, fit.id: 1200.0, other.id: 1800.0}
    calls = _fake(monkeypatch, protocol, clock, speeds, noise=0.001)

    result = budget.run_in_turns(
        Work(
            (DEFAULT, ONE, TWO, fit, other),
            protocol,
            Platform(),
            contenders=(DEFAULT.id, ONE.id, TWO.id, fit.id),
        ),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
    )

    assert calls[:3] == ["h0"] * 3 and "g0" in calls and not [c for c in calls if c.startswith("r")]
    raced = {r.subject: r for r in result.ratios if r.relation == "fastest"}
    assert set(raced) == {DEFAULT.id, ONE.id, fit.id}  # each against TWO, the fastest
    assert {r.reference for r in raced.values()} == {TWO.id}
    assert raced[fit.id].ratio.value == pytest.approx(1200 / 1500, rel=0.01)
    assert all(r.verdict == "lower" and r.group == "h0" for r in raced.values())
    inside = {(r.relation, r.subject) for r in result.ratios if r.group == "h0"}
    assert ("loop", fit.id) in inside and ("scaling", TWO.id) in inside
    assert {r.group for r in result.ratios if r.relation == "cotenancy"} == {"g0"}


def test_a_selection_whose_minimum_cannot_fit_is_refused_with_what_would() -> None:
    protocol = Protocol(processes=3, budget_min=1.0, blocks=4)
    plan = budget.Plan.of(protocol, 0.0)
    cells = [DEFAULT, ONE, TWO, Cell(model="cnn", strategy="default", batch=32)]
    found = budget.plan_groups(cells, (), 8)
    cpu = budget.PRIORS["cpu"]
    need = limits.minimum_s(found, protocol, plan, cpu)
    # 3 instances of a 3-member and a 1-member group, 2 peaks and the end kept
    members = 3 + 1
    turns = cpu.stretch * members * 2 * 4 * protocol.turn_s
    assert need == pytest.approx(3 * (members * cpu.member_s + turns) + 2 * cpu.peak_s + 15)
    with pytest.raises(HarnessError) as info:
        limits.check_minimum(found, protocol, plan, cpu)
    text = str(info.value)
    assert "--budget-min 1;" in text and f"--budget-min {math.ceil(need / 60)} or more" in text
    assert "(--model cnn: about" in text  # the model that fits alone
    with pytest.raises(HarnessError, match=r"\(--sweep default --model cnn: about"):
        limits.check_minimum(found, protocol, plan, cpu, "default")
    limits.check_minimum(found, dataclasses.replace(protocol, budget_min=need / 60), plan, cpu)
    # a GPU instance costs more before any has ended (start-up and the step breakdown)
    assert limits.minimum_s(found, protocol, plan, budget.PRIORS["gpu"]) > need


def test_a_cell_the_budget_never_reaches_has_a_row_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 27 s less the 15 s kept for the end: one 10 s instance, then nothing fits
    other = Cell(model="cnn", strategy="default", batch=32)
    protocol = Protocol(processes=3, max_processes=3, budget_min=0.45, blocks=2, max_live=8, peak=False)
    clock = Clock()
    calls = _fake(monkeypatch, protocol, clock, {DEFAULT.id: 1000.0, other.id: 500.0})

    result = _run(tmp_path, protocol, clock, [DEFAULT, other])

    assert len(calls) == 1
    rows = {r.cell.cell_id: r for r in result.rows}
    assert rows[DEFAULT.id].status == "ok"
    assert rows[other.id].status == "not measured"
    assert rows[other.id].reason == "the budget (0.45 min) was spent before its first process"


def test_a_groups_minimum_may_use_the_whole_budget_before_the_second_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10 s an instance, 95 s less the 15 s kept: the first stage's 70% (51.5 s) would stop after
    # 5 instances, but the minimum (3 of each of 2 groups) may use the whole 80 s
    protocol = Protocol(processes=3, max_processes=3, budget_min=95 / 60, blocks=2, max_live=2, peak=False)
    clock = Clock()
    workers = Cell(model="dense", strategy="multi_worker_mirrored", workers=2, batch=32)
    calls = _fake(monkeypatch, protocol, clock, {DEFAULT.id: 1000.0, workers.id: 1010.0}, noise=0.2)

    _race(tmp_path, protocol, clock, [DEFAULT, workers])  # 3 processes in 2 live: no race fits

    assert sorted(c for c in calls if c.startswith("g")) == ["g0"] * 3 + ["g1"] * 3
    assert clock.now <= protocol.budget_s - budget.CLOSE_S


def test_a_race_with_no_undisturbed_block_says_why_it_has_no_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(
        processes=1, max_processes=1, budget_min=60.0, blocks=2, max_live=8, peak=False, busy_ok=True
    )
    clock = Clock()
    _fake(monkeypatch, protocol, clock, {DEFAULT.id: 1000.0, ONE.id: 900.0, TWO.id: 1500.0}, other_cpu_s=1.0)

    result = budget.run_in_turns(
        Work((DEFAULT, ONE, TWO), protocol, Platform(), contenders=(DEFAULT.id, ONE.id, TWO.id)),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
    )

    raced = [r for r in result.ratios if r.relation == "fastest"]
    assert {r.subject for r in raced} == {ONE.id, TWO.id} and {r.reference for r in raced} == {DEFAULT.id}
    assert all(r.verdict == "not measured" and "was disturbed" in r.note for r in raced)


def test_later_instances_reuse_the_window_steps_of_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=3, max_processes=3, budget_min=60.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0})
    fake = budget.run_instance
    given: list[dict[str, int]] = []

    def calibrated(*args, **kwargs):  # type: ignore[no-untyped-def]
        given.append(dict(args[6] if len(args) > 6 else kwargs.get("steps") or {}))
        instance = fake(*args, **kwargs)
        instance.steps = {m.key: 30 for m in instance.group.members}
        return instance

    monkeypatch.setattr(budget, "run_instance", calibrated)
    _run(tmp_path, protocol, clock, [ONE, TWO])

    assert given[0] == {} and all(g == {ONE.id: 30, TWO.id: 30} for g in given[1:]) and len(given) == 3


NARROW = (0.03, 0.05, 0.04)  # undecided; 8 instances in all (5 more) would likely decide it
WIDE = (0.1, -0.1, 0.0)  # undecided, and wider
DIFFERENT = (0.20, 0.21, 0.19)  # decided


def _budget(tmp_path: Path, protocol: Protocol, clock: Clock, contenders: tuple[str, ...]) -> budget.TurnsRun:
    """A run's budget before any instance (none is run: the tests set each group's evidence):
    with ONE and TWO the contenders, h0 races them (its comparison: scaling TWO vs ONE) and g0
    holds DEFAULT, ONE and TWO (the two strategy comparisons)."""
    folder = tmp_path / f"run{len(contenders)}"
    run = RunState([DEFAULT, ONE, TWO], protocol, Platform(), folder, PeakLog(Platform(), ()))
    options = WorkerOptions.of(protocol, Platform(), folder / "logs")
    return budget.TurnsRun(run, options, run_cell_processes, clock, contenders=contenders)


def _measured(
    g: budget.GroupRun, logs: Sequence[Sequence[float]], instances: int = 3, seconds: float = 10.0
) -> None:
    """``instances`` of ``seconds`` each with these instance log ratios per comparison; a race's
    turns have TWO 10% ahead of ONE in every instance (its FASTEST comparison decided)."""
    g.instances, g.seconds = instances, instances * seconds
    g.logs = {i: list(x) for i, x in enumerate(logs)}
    if g.group.race:
        speed = {ONE.id: 1000.0, TWO.id: 1100.0}
        g.turns = [[Turn(0, m.key, 1.0, speed[m.cell.id]) for m in g.group.members] for _ in range(instances)]


def test_a_headline_that_more_instances_would_likely_decide_gets_every_extra_instance(tmp_path: Path) -> None:
    # 600 s, 15 s kept for the end: HEADLINE_SHARE of the 585 s left is 497 s; 10 s an instance
    clock = Clock()

    def run(most: int, g0_instances: int = 3, h0_seconds: float = 10.0) -> budget.TurnsRun:
        """h0 whose scaling comparison is NARROW, g0 whose two are WIDE, at the budget's start."""
        protocol = Protocol(
            processes=3, max_processes=most, budget_min=10.0, blocks=2, max_live=8, peak=False
        )
        clock.now = 0.0
        state = _budget(tmp_path / f"{most}-{g0_instances}-{h0_seconds:g}", protocol, clock, (ONE.id, TWO.id))
        h0, g0 = state.groups
        assert (h0.group.name, g0.group.name) == ("h0", "g0")
        _measured(h0, [NARROW], seconds=h0_seconds)
        _measured(g0, [WIDE, WIDE], instances=g0_instances)
        return state

    for most, past_share in ((40, 0), (8, 0), (6, 1)):  # 5 more instances fit 37 and 5 left, not 3
        state = run(most)
        assert state.next() == 0  # the headline first, though g0's comparisons are wider
        clock.now = 560.0
        assert state.next() == past_share  # past HEADLINE_SHARE only when not likely decidable
    assert run(40, g0_instances=2).next() == 1  # every group's minimum first
    # a headline instance that no longer fits (30 s) leaves what is left to the others (10 s)
    state = run(40, h0_seconds=30.0)
    clock.now = 560.0
    assert state.next() == 1


def test_a_headline_scaling_efficiency_wants_instances_while_its_ci_is_over_a_tenth_of_it(
    tmp_path: Path,
) -> None:
    # 4 instances m -+ a: sd 2a / sqrt 3, h = t(3) a / sqrt 3 = log(0.438 / 0.374) / 2 = 0.078985
    m, a = math.log(2 * 0.405), 0.078985 * math.sqrt(3) / 3.182446
    wide = (m - a, m - a, m + a, m + a)
    efficiency = turns.turn_ratio(wide, scale=0.5)
    assert (efficiency.value, efficiency.low, efficiency.high) == pytest.approx(
        (0.405, 0.374, 0.438), abs=6e-4
    )
    assert efficiency.decided() and turns.relative_width(wide) == pytest.approx(0.158, abs=1e-3)
    narrow = (m - a / 2, m - a / 2, m + a / 2, m + a / 2)  # 0.079 wide
    protocol = Protocol(processes=3, max_processes=40, budget_min=10.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    state = _budget(tmp_path, protocol, clock, (ONE.id, TWO.id))
    h0, g0 = state.groups
    _measured(h0, [wide], instances=4)
    _measured(g0, [DIFFERENT, DIFFERENT])
    assert h0.state().targets == (group_run.SCALING_CI_WIDTH, None) and g0.state().targets == (None, None)
    for now in (0.0, 560.0):  # the only open comparison, whatever the time
        clock.now = now
        assert state.next() == 0
    _measured(h0, [narrow], instances=4)
    assert state.next() is None  # within its target, everything decided: the budget ends
    _measured(h0, [wide], instances=40)
    assert state.next() is None  # --max-processes is the cap
    # open for its target while the instances that would narrow it are within --max-processes:
    # first for the whole budget; out of reach, first only within HEADLINE_SHARE, then the widest
    _measured(h0, [wide], instances=4)
    _measured(g0, [WIDE, WIDE])
    assert turns.instances_to_narrow(wide, group_run.SCALING_CI_WIDTH) == 7
    assert [state.next() for clock.now in (0.0, 560.0)] == [0, 0]
    clock.now = 0.0
    capped = _budget(tmp_path, dataclasses.replace(protocol, max_processes=6), clock, (ONE.id, TWO.id))
    _measured(capped.groups[0], [wide], instances=4)
    _measured(capped.groups[1], [WIDE, WIDE])
    assert [capped.next() for clock.now in (0.0, 560.0)] == [0, 1]
    # outside the headline a scaling comparison has no target: decided, it is done
    plain = _budget(tmp_path, protocol, clock, ())
    (g,) = plain.groups
    _measured(g, [wide] * len(g.group.comparisons))
    assert set(g.state().targets) == {None} and plain.next() is None


def test_the_default_sweep_breaks_down_the_cells_the_answer_names_after_its_turns(tmp_path: Path) -> None:
    protocol = Protocol(
        processes=3, budget_min=10.0, blocks=2, max_live=8, peak=False, breakdown=False, breakdown_named=True
    )
    state = _budget(tmp_path, protocol, Clock(), (ONE.id, TWO.id))
    for cell in (DEFAULT, ONE, TWO):
        state.run.record(_end(cell, protocol, 1000.0), 0)
    h0, _ = state.groups
    _measured(h0, [DIFFERENT], instances=2)
    assert state.named() == set() and state.to_break_down() == []  # below its minimum: none yet
    prior = budget.PRIORS["cpu"].breakdown_s
    assert state.breakdowns_due() == 2  # the headline's leader and closest rival, once known
    assert state.budget(state.breakdowns_due() * state.breakdown_s()).reserve_s == pytest.approx(
        2 * prior + budget.CLOSE_S
    )
    _measured(h0, [DIFFERENT], instances=3)
    assert {c.id for c in state.to_break_down()} == {ONE.id, TWO.id}  # TWO leads, ONE its rival
    assert not state.member_options.settings.breakdown
    state.keep(Apart(ONE.id, BROKEN_DOWN, 4.0))  # the run's own breakdown process replaces the prior
    assert [c.id for c in state.to_break_down()] == [TWO.id]
    assert state.budget(state.breakdowns_due() * state.breakdown_s()).reserve_s == pytest.approx(
        4.0 + budget.CLOSE_S
    )
    every = _budget(tmp_path, dataclasses.replace(protocol, breakdown=True), Clock(), ())
    for cell in (DEFAULT, ONE):
        every.run.record(_end(cell, protocol, 1000.0), 0)
    every.run.record(_end(TWO, protocol, 0.0, "invalid", "loss is NaN"), 0)
    assert [c.id for c in every.to_break_down()] == [DEFAULT.id, ONE.id]  # every cell measured ok


def test_the_step_breakdowns_run_after_the_last_instance_and_reach_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(
        processes=3, budget_min=2.0, blocks=2, max_live=8, peak=False, breakdown=False, breakdown_named=True
    )
    clock = Clock()
    order: list[str] = []
    calls = _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0})
    fake_instance, fake_apart = budget.run_instance, _fake_apart(clock)

    def instance(*args, **kwargs):  # type: ignore[no-untyped-def]
        order.append("instance")
        return fake_instance(*args, **kwargs)

    def apart(cell, *args):  # type: ignore[no-untyped-def]
        order.append(cell.id)
        return fake_apart(cell, *args)

    monkeypatch.setattr(budget, "run_instance", instance)
    monkeypatch.setattr(budget, "measure_apart", apart)
    result = budget.run_in_turns(
        Work((DEFAULT, ONE, TWO), protocol, Platform(), contenders=(ONE.id, TWO.id)),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ()), progress=Progress(1, stream=io.StringIO())),
    )
    assert sorted(order[-2:]) == sorted([ONE.id, TWO.id]) and set(order[:-2]) == {"instance"}
    assert len(calls) == len(order) - 2 and clock.now <= protocol.budget_s
    rows = {r.cell.cell_id: r for r in result.rows}
    assert (
        rows[TWO.id].breakdown.compute_s == BROKEN_DOWN.compute_s
        and rows[TWO.id].breakdown.bound == "compute"
    )
    assert rows[DEFAULT.id].breakdown.parts_step_s is None  # not named: not broken down
    costs = pd.read_parquet(tmp_path / "results" / "costs")
    assert costs["breakdowns"].tolist() == [2] and costs["breakdown_s"].tolist() == [10.0]
    assert "step breakdowns 10 s in 2 processes" in result.cost


def test_a_step_breakdown_that_no_longer_fits_the_budget_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=3, max_processes=3, budget_min=0.75, blocks=2, max_live=8, peak=False)
    clock = Clock()
    _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0})
    monkeypatch.setattr(budget, "measure_apart", _fake_apart(clock, seconds=8.0))
    result = _run(tmp_path, protocol, clock, [DEFAULT, ONE, TWO])
    # 45 s: 3 instances of 10 s, then 15 s for the end; the first breakdown's 8 s do not fit
    reasons = {r.breakdown.bound_reason for r in result.rows}
    assert reasons == {"step breakdown not measured: the budget was spent before its process"}
    assert clock.now == 30.0


@pytest.mark.parametrize("gpus", [1, 8])
@pytest.mark.parametrize("live", [8, 16])
def test_the_default_sweep_on_a_gpu_host_fits_its_budget_by_the_gpu_prior(gpus: int, live: int) -> None:
    from harness.spec.protocol import Platform
    from harness.spec.rules import unsupported_reason
    from harness.spec.sweep import contenders, expand
    from harness.spec.sweeps import get_sweep

    sweep, platform = get_sweep("default"), Platform("gpu", gpus, gpu_memory_mib=81_559)
    runnable = [c for c in expand(sweep, platform) if unsupported_reason(c, platform) is None]
    found = budget.plan_groups(runnable, contenders(sweep, platform), live)
    need = limits.minimum_s(found, sweep.protocol, budget.Plan.of(sweep.protocol, 0.0), budget.PRIORS["gpu"])
    assert need <= sweep.protocol.budget_s  # 521-762 s of 780
    limits.check_minimum(found, sweep.protocol, budget.Plan.of(sweep.protocol, 0.0), budget.PRIORS["gpu"])
    assert sum(g.race for g in found) == 2  # each model's headline raced


def test_a_stopped_run_names_the_cells_it_never_reached_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.analysis.run.ratios_text import ratios_text

    protocol = Protocol(processes=2, max_processes=2, budget_min=10.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    _fake(monkeypatch, protocol, clock, {ONE.id: 1000.0, TWO.id: 1100.0, DEFAULT.id: 1000.0})
    fake = budget.run_instance

    def stopped(group, *args, **kwargs):  # type: ignore[no-untyped-def]
        if group.name == "g0":  # Ctrl-C once the headline's instances are done
            raise KeyboardInterrupt
        return fake(group, *args, **kwargs)

    monkeypatch.setattr(budget, "run_instance", stopped)
    result = budget.run_in_turns(
        Work((DEFAULT, ONE, TWO), protocol, Platform(), contenders=(ONE.id, TWO.id)),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
    )
    assert result.interrupted and DEFAULT.id not in {r.cell.cell_id for r in result.rows}
    assert [r.cell.cell_id for r in result.unreached] == [DEFAULT.id]  # named, not written
    text = ratios_text(result.ratios, 1.0, 2, cells=[*result.rows, *result.unreached])
    assert "not measured" in text and "no distribution strategy" in text
    assert DEFAULT.id not in text and ONE.id not in text


def test_a_ctrl_c_while_the_rows_are_written_waits_for_them() -> None:
    import os
    import signal

    with budget.held_signals() as caught:
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt inside the block
        written = True
    assert written and caught == [signal.SIGINT]
    with pytest.raises(KeyboardInterrupt):  # the handler before it is back
        os.kill(os.getpid(), signal.SIGINT)
