"""harness.launch.system.cpu_use on a fake /proc: a turn's CPU split between the member, the run's other
processes and the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.launch.system.cpu_use import (
    ProcessCpu,
    Snapshot,
    attribute,
    descendants,
    host_cpu_seconds,
    process_table,
)

TICK = os.sysconf("SC_CLK_TCK")


def _stat(proc: Path, pid: int, ppid: int, name: str, ticks: int, flags: int = 0, start: int = 0) -> None:
    folder = proc / str(pid)
    folder.mkdir(exist_ok=True)
    # state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
    # cstime priority nice threads itrealvalue starttime ...
    fields = ["S", str(ppid), *["0"] * 4, str(flags), *["0"] * 4, str(ticks), "0", "30", "10"]
    rest = " ".join([*fields, *["0"] * 4, str(start), *["0"] * 30])
    (folder / "stat").write_text(f"{pid} ({name}) {rest}")


def test_a_process_table_reads_parents_names_and_cpu_seconds(tmp_path: Path) -> None:
    _stat(tmp_path, 10, 1, "python3 -m (x)", 250, start=777)  # a name with ")" and spaces
    _stat(tmp_path, 12, 2, "kworker/u64:1-events_unbound", 3, flags=0x04208060)  # PF_KTHREAD set
    (tmp_path / "self").mkdir()  # not a pid: skipped
    (tmp_path / "11").mkdir()  # gone between listing and reading: skipped
    table = process_table(str(tmp_path))
    assert table == {
        10: ProcessCpu(1, "python3 -m (x)", 250 / TICK, start=777, children_s=40 / TICK),
        12: ProcessCpu(2, "kworker/u64:1-events_unbound", 3 / TICK, kernel=True, children_s=40 / TICK),
    }


def test_host_busy_time_is_every_field_but_idle_and_iowait(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 20 9000 40 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    assert host_cpu_seconds(str(stat)) == pytest.approx((137 / TICK, 7 / TICK))
    assert host_cpu_seconds(str(tmp_path / "missing")) is None


def test_the_runs_processes_are_the_parent_and_everything_below_it() -> None:
    table = {
        100: ProcessCpu(1, "python3", 0.0),  # the parent
        101: ProcessCpu(100, "python3", 0.0),  # a fork server
        102: ProcessCpu(101, "python3", 0.0),  # a worker forked from it
        103: ProcessCpu(102, "ptxas", 0.0),  # a worker's child
        200: ProcessCpu(1, "xz", 0.0),
    }
    assert descendants(table, 100) == {100, 101, 102, 103}


def _snapshot(
    busy_s: float,
    at_s: float,
    cpu: dict[int, float],
    steal_s: float = 0.0,
    starts: dict[int, int] | None = None,
    reaped: dict[int, float] | None = None,
    names: dict[int, str] | None = None,
) -> Snapshot:
    parents = {100: 1, 101: 100, 102: 101, 103: 101, 200: 1, 300: 100, 400: 2, 500: 102}
    named = {200: "xz", 300: "ptxas", 400: "kworker/3:1-events", 500: "ptxas", **(names or {})}
    procs = {
        p: ProcessCpu(
            parents[p],
            named.get(p, "python3"),
            s,
            kernel=p == 400,
            start=(starts or {}).get(p, 0),
            children_s=(reaped or {}).get(p, 0.0),
        )
        for p, s in cpu.items()
    }
    return Snapshot(busy_s, procs, at_s, steal_s)


def test_a_turns_cpu_is_split_between_the_member_the_run_the_kernel_and_other_programs() -> None:
    # 0.25 s of a 4-CPU host: busy 0.90 s. The member (102) used 0.40, the waiting member (103)
    # 0.10, the parent 0.05, a ptxas the parent started in the turn 0.02, xz 0.20, a kernel
    # worker 0.06, the hypervisor stole 0.04; 0.03 s no process accounts for (interrupts)
    before = _snapshot(10.0, 1.0, {100: 1.0, 101: 2.0, 102: 5.0, 103: 3.0, 200: 7.0, 400: 1.0}, 2.0)
    cpu = {100: 1.05, 101: 2.0, 102: 5.4, 103: 3.1, 200: 7.2, 300: 0.02, 400: 1.06}
    after = _snapshot(10.9, 1.25, cpu, 2.04)
    use = attribute(before, after, [102], root=100, cpus=4)
    assert use.span_s == pytest.approx(0.25)
    assert use.member_s == pytest.approx(0.40)
    assert use.run_s == pytest.approx(0.17)  # 103, the parent, the new ptxas
    assert use.other_s == pytest.approx(0.33)  # xz, the kernel worker, steal, the 0.03 s unclaimed
    assert use.foreign_s == pytest.approx(0.24)  # xz and steal: not the kernel, not the unclaimed
    assert (use.busiest, use.busiest_s) == ("xz[200]", pytest.approx(0.20))
    assert use.idle_cpus == pytest.approx(4 - 0.9 / 0.25)


def test_the_hypervisor_is_named_when_its_steal_is_the_largest() -> None:
    before = _snapshot(10.0, 1.0, {100: 1.0, 102: 5.0}, steal_s=2.0)
    after = _snapshot(10.5, 1.25, {100: 1.0, 102: 5.2}, steal_s=2.2)
    use = attribute(before, after, [102], root=100, cpus=2)
    assert (use.busiest, use.busiest_s, use.foreign_s) == ("steal", pytest.approx(0.2), pytest.approx(0.2))


def test_without_the_members_pids_its_reported_cpu_is_taken_from_the_runs() -> None:
    before = _snapshot(10.0, 1.0, {100: 1.0, 101: 2.0, 102: 5.0})
    after = _snapshot(10.5, 1.25, {100: 1.0, 101: 2.0, 102: 5.45})
    use = attribute(before, after, [], root=100, cpus=4, member_reported_s=0.4)
    assert (use.member_s, use.run_s, use.other_s) == pytest.approx((0.4, 0.05, 0.05))
    assert use.busiest == ""


def test_an_unknown_host_counts_nothing_outside_the_run() -> None:
    before = Snapshot(None, {}, 1.0)
    use = attribute(before, Snapshot(None, {}, 1.2), [5], root=100, cpus=2)
    assert use.other_s == 0.0 and use.busiest == ""


def test_a_member_s_children_count_as_the_member() -> None:
    # the member (102) started a ptxas (500) that used 0.3 s: the member's, not the run's
    before = _snapshot(10.0, 1.0, {100: 1.0, 101: 2.0, 102: 5.0})
    after = _snapshot(10.8, 1.25, {100: 1.0, 101: 2.0, 102: 5.4, 500: 0.3})
    use = attribute(before, after, [102], root=100, cpus=4)
    assert (use.member_s, use.run_s) == pytest.approx((0.7, 0.0))


def test_a_renamed_process_is_the_same_process_and_a_reused_pid_a_new_one() -> None:
    # xz (200) renames itself to "xz worker" between the snapshots: 0.1 s, not its lifetime's 7.1
    before = _snapshot(10.0, 1.0, {100: 1.0, 200: 7.0}, starts={200: 50})
    after = _snapshot(10.5, 1.25, {100: 1.0, 200: 7.1}, starts={200: 50}, names={200: "xz worker"})
    assert attribute(before, after, [], root=100, cpus=4).foreign_s == pytest.approx(0.1)
    # pid 200 ended and a new process got it (another start time): its 0.05 s are all in the turn
    reused = _snapshot(10.5, 1.25, {100: 1.0, 200: 0.05}, starts={200: 90}, names={200: "cc1"})
    assert attribute(before, reused, [], root=100, cpus=4).foreign_s == pytest.approx(0.05)


def test_the_children_another_program_waited_for_count_as_that_program() -> None:
    # make (200) reaped compilers that used 0.6 s in the turn and ended before the second reading
    before = _snapshot(10.0, 1.0, {100: 1.0, 200: 1.0}, reaped={200: 4.0}, names={200: "make"})
    after = _snapshot(10.8, 1.25, {100: 1.0, 200: 1.01}, reaped={200: 4.6}, names={200: "make"})
    use = attribute(before, after, [], root=100, cpus=4)
    assert use.foreign_s == pytest.approx(0.61) and use.busiest == "make[200]"


def test_a_snapshot_scans_outside_the_two_host_readings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.launch.system.cpu_use as cpu_use

    order: list[str] = []
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 0 0 9 0 0 0 0 0 0\n")
    monkeypatch.setattr(cpu_use, "process_table", lambda proc="/proc": order.append("scan") or {})

    def clock() -> float:
        order.append("clock")
        return 1.0

    Snapshot.take(clock, first=True, stat=str(stat))
    Snapshot.take(clock, first=False, stat=str(stat))
    assert order == ["scan", "clock", "clock", "scan"]
