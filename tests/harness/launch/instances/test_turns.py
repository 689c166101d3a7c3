"""Group instances in turns: the coordinator against fake workers on real sockets (unit tier), and
real worker processes: a planted slowdown measured in turns, a member that dies mid-instance."""

from __future__ import annotations

import math
import os
import socket
import threading
from pathlib import Path

import pytest

from harness.contract.job import FAULT_ENV, WorkerOptions
from harness.contract.turns import Do
from harness.formulas.turns import instance_log_ratio
from harness.launch.instances.turns import Coordinator, Dropped, Instance, Plan, _coordinate, run_instance
from harness.launch.sweep.budget import _culprits
from harness.spec.cell import Cell
from harness.spec.groups import Comparison, Group, Member, Relation, ab_group
from harness.spec.protocol import Platform, Protocol
from harness.worker.faults import SLOW_ENV
from harness.worker.turns import TurnClient, TurnsClosed
from tests.cli import interpreter_pid

A = Cell(model="dense", strategy="default", batch=32, steps_per_execution=1)
B = Cell(model="dense", strategy="default", batch=64, steps_per_execution=1)
PAIR = Group((Member(A), Member(B)), (Comparison(Relation.STRATEGY, B.id, A.id),), name="g0")


def _fake_worker(path: str, key: str, seconds: float, log: list[str], die_at: int | None = None) -> None:
    """A worker that says hello, calibrates to 10 steps and reports ``seconds`` per window."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    client = TurnClient(sock, key, 0)
    client.hello()
    windows = 0
    while True:
        try:
            grant = client.grant()
        except TurnsClosed:
            return
        if grant["do"] == Do.CALIBRATE:
            client.reply({"done": Do.CALIBRATE, "steps": 10})
        elif grant["do"] == Do.WINDOW:
            windows += 1
            if die_at is not None and windows == die_at:
                client.close()
                return
            log.append(key)
            client.reply({"done": Do.WINDOW, "seconds": seconds})
        else:
            client.reply({"done": Do.FINISH})
            client.close()
            return


def _coordinate_fakes(tmp_path: Path, die_at: int | None = None) -> tuple[Instance, list[str]]:
    coordinator = Coordinator(tmp_path)
    log: list[str] = []
    threads = [
        threading.Thread(target=_fake_worker, args=(coordinator.path, A.id, 0.2, log), daemon=True),
        threading.Thread(target=_fake_worker, args=(coordinator.path, B.id, 0.1, log, die_at), daemon=True),
    ]
    for t in threads:
        t.start()
    instance = Instance(PAIR, 0)
    try:
        _coordinate(coordinator, PAIR, Plan(blocks=3, turn_s=0.1, seed=1), instance, lambda: None)
    except Dropped as e:
        instance.dropped, instance.culprit = str(e), e.culprit
    finally:
        coordinator.close()
        for t in threads:
            t.join(5)
    return instance, log


def test_turns_are_granted_one_member_at_a_time_in_balanced_blocks(tmp_path: Path) -> None:
    instance, log = _coordinate_fakes(tmp_path)
    assert not instance.dropped
    assert instance.steps == {A.id: 10, B.id: 10}
    assert len(instance.turns) == 12 and [t.member for t in instance.turns] == log
    for block in range(3):
        order = [t.member for t in instance.turns if t.block == block]
        assert order in ([A.id, B.id, B.id, A.id], [B.id, A.id, A.id, B.id])
    # examples: steps x effective batch; B does twice A's work in half the time: 4x the throughput
    assert {t.examples for t in instance.turns if t.member == B.id} == {10 * 64}
    assert math.exp(instance_log_ratio(instance.turns, B.id, A.id)) == pytest.approx(4.0)


def test_a_member_that_closes_its_channel_drops_the_instance(tmp_path: Path) -> None:
    instance, _ = _coordinate_fakes(tmp_path, die_at=2)
    assert "closed its channel" in instance.dropped and instance.culprit == B.id


PROTOCOL = Protocol(
    repeats=2,
    window_s=0.05,
    warmup_windows=1,
    min_window_steps=2,
    processes=1,
    max_processes=1,
    peak=False,
    breakdown=False,
    turn_s=0.05,
    blocks=3,
    cell_timeout_s=120.0,
)


def _children() -> list[int]:
    """Processes whose parent is this one, but the session's command-line interpreter
    (:mod:`tests.cli`, alive from the first command line to the session's end)."""
    me, out = os.getpid(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me and int(pid) != interpreter_pid():
            out.append(int(pid))
    return out


def _plan() -> Plan:
    return Plan(PROTOCOL.blocks, PROTOCOL.turn_s, 0, 120.0, 120.0)


@pytest.mark.slow  # 11 s on 2 cores (2026-11-27): the default tier keeps ab's turns mode end to end
# (tests/harness/commands/test_ab.py: run_instance of an ab_group with B slowed by the same
# HARNESS_SLOW_WINDOWS=1.0, every pair's turn ratio within these bounds, no process left)
@pytest.mark.process
def test_a_planted_slowdown_is_measured_in_turns(tmp_path: Path) -> None:
    group = ab_group(A)
    base = WorkerOptions.of(PROTOCOL, Platform(), tmp_path / "logs")
    envs = {"A": (), "B": ((SLOW_ENV, "1.0"),)}  # B spins as long again after every call: half speed

    instance = run_instance(group, 0, _plan(), lambda m: WorkerOptions(**{**vars(base), "env": envs[m.side]}))

    assert not instance.dropped, instance.dropped
    assert {e.event for e in instance.ends.values()} == {"record"}
    ratio = math.exp(instance_log_ratio(instance.turns, "B:" + A.id, "A:" + A.id))
    assert 0.35 < ratio < 0.7, ratio
    assert len(instance.turns) == 4 * PROTOCOL.blocks
    assert not _children()


@pytest.mark.process
def test_a_member_dying_mid_instance_drops_it_and_stops_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAULT_ENV, f"kill@turn:{B.id}")
    options = WorkerOptions.of(PROTOCOL, Platform(), tmp_path / "logs")

    instance = run_instance(PAIR, 0, _plan(), lambda m: options)

    assert instance.dropped
    killed, stopped = instance.ends[B.id], instance.ends[A.id]
    assert killed.event == "failed" and "SIGKILL" in killed.reason
    assert instance.culprit == B.id and list(_culprits(instance)) == [B.id]
    # the other member was stopped with the instance, not left to its deadline
    assert stopped.event == "failed" or (stopped.row is not None and stopped.row.status == "failed")
    assert not _children()


def test_an_instances_processes_are_found_by_member_and_their_cpu_time_summed(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from harness.contract.turns import MEMBER_ENV, TURNS_ENV
    from harness.launch.system.cpu_use import read_process

    def processes_cpu_seconds(pids, proc):
        return sum(p.cpu_s for p in (read_process(pid, proc) for pid in pids) if p is not None)

    from harness.launch.system.process import instance_processes

    ticks = os.sysconf("SC_CLK_TCK")

    def process(pid: int, utime: int, stime: int) -> None:
        folder = tmp_path / str(pid)
        folder.mkdir()
        rest = " ".join(["S", *["0"] * 10, str(utime), str(stime), *["0"] * 30])
        (folder / "stat").write_text(f"{pid} (python -m harness.worker) {rest}")

    mine = {TURNS_ENV: "/tmp/x/turns.sock"}
    live = {  # the environment each child was given (a forked one's /proc environ is its server's)
        11: SimpleNamespace(env={**mine, MEMBER_ENV: "a"}),  # the chief of member a
        12: SimpleNamespace(env={**mine, MEMBER_ENV: "a"}),  # a server of member a: counted too
        13: SimpleNamespace(env={**mine, MEMBER_ENV: "b"}),
        14: SimpleNamespace(env={TURNS_ENV: "/tmp/other/turns.sock", MEMBER_ENV: "a"}),  # another
        15: SimpleNamespace(env={}),  # not in an instance
    }
    for pid, (utime, stime) in {11: (100, 50), 12: (30, 20), 13: (7, 0)}.items():
        process(pid, utime, stime)

    found = instance_processes("/tmp/x/turns.sock", live)  # type: ignore[arg-type]
    assert {k: sorted(v) for k, v in found.items()} == {"a": [11, 12], "b": [13]}
    assert processes_cpu_seconds(found["a"], str(tmp_path)) == pytest.approx(200 / ticks)
    assert processes_cpu_seconds([99], str(tmp_path)) == 0.0  # gone: nothing


def test_a_member_dying_with_its_grant_unread_drops_the_instance(tmp_path: Path) -> None:
    # its channel is reset rather than closed: the coordinator reads that as a closed channel
    coordinator = Coordinator(tmp_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(coordinator.path)
    TurnClient(sock, A.id, 0).hello()
    try:
        coordinator.gather({A.id: 1}, 5.0, lambda: None)
        coordinator.send(A.id, {"do": Do.CALIBRATE})  # unread when the process dies
        threading.Timer(0.2, sock.close).start()
        with pytest.raises(Dropped, match="closed its channel") as e:
            coordinator.ask(A.id, {"do": Do.WINDOW}, 5.0)
        assert e.value.culprit == A.id
    finally:
        coordinator.close()
