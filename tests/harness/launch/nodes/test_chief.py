"""The chief of a real cluster (:mod:`harness.launch.nodes.chief`) with a fake lease and a fake launcher:
no TensorFlow, no process. What a lost task, the budget and ``--resume`` do to the rows."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.contract.columns import Estimate, flatten
from harness.contract.events import Event, EventLine
from harness.contract.records import Machine, Status
from harness.launch.cells.cluster import ClusterConfig, ClusterPlace
from harness.launch.cells.runner import CellEnd
from harness.launch.nodes import chief
from harness.launch.nodes.chief import ChiefRun, measure, place, replayed
from harness.launch.nodes.lease import Lost
from harness.launch.sweep.sweep_run import exit_code
from harness.results import journal
from harness.results.measurement import cell_row
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

pytestmark = pytest.mark.usefixtures("no_git")

TWO_NODES = ClusterConfig((("worker", ("node1:8888", "node2:8888")),), "worker", 0)
PS_TWO_NODES = ClusterConfig(
    (("chief", ("node1:8888",)), ("worker", ("node2:8888",)), ("ps", ("node1:8889",))), "chief", 0
)
CELLS = tuple(
    Cell(model=m, strategy="multi_worker_mirrored", workers=2, batch=b)
    for m, b in (("dense", 32), ("dense", 64), ("cnn", 32))
)


class FakeLease:
    """A lease whose task ``worker 1`` (node2) is lost once ``lose_after`` cells have started."""

    def __init__(
        self,
        lose_after: int | None = None,
        gbps: float | None = 0.94,
        why: str = "its connection to the run lease closed",
    ) -> None:
        self.started: list[str] = []
        self.lose_after = lose_after
        self.gbps = gbps
        self.gone = Lost("worker 1", "node2", time.time(), why)

    def lost(self) -> Lost | None:
        if self.lose_after is None or len(self.started) < self.lose_after:
            return None
        return self.gone

    def failed(self, name: str) -> str | None:
        return None

    def probe(self, task: str) -> float | None:
        return self.gbps

    def start_cell(self, name: str, cell: dict[str, Any]) -> None:
        self.started.append(name)


def _launcher(lease: FakeLease, protocol: Protocol, calls: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    """Each cell started is announced, then it records 100 examples/s, or fails naming the lost task
    (what :func:`harness.launch.cells.single.run_worker`'s abort does)."""

    def launch(cell: Cell, options: object, name: str) -> Iterator[EventLine]:
        lease.start_cell(name, cell.to_dict())
        calls.append((name, cell.id))
        yield {"event": "start", "cell_id": cell.id, "facts": None}
        gone = lease.lost()
        if gone is not None:
            yield {"event": "failed", "cell_id": cell.id, "facts": None, "reason": gone.text()}
            return
        row = dataclasses.replace(
            cell_row(cell, protocol),
            status=Status.OK,
            reason="",
            examples_per_sec=Estimate(100.0),
            machine=Machine(fingerprint="fp"),
        )
        window = {"cell_id": cell.id, "worker": 0, "repeat": 0, "window_s": 1.0, "window_steps": 1}
        yield {
            "event": "record",
            "row": flatten(row),
            "facts": None,
            "windows": [{**window, "examples": 100}],
        }

    return launch


def _measure(
    tmp_path: Path,
    lease: FakeLease,
    monkeypatch: pytest.MonkeyPatch,
    protocol: Protocol,
    run: ChiefRun | None = None,
    config: ClusterConfig = TWO_NODES,
) -> tuple[Any, list[tuple[str, str]], Path]:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(chief, "chief_launcher", lambda c, lease_: _launcher(lease, protocol, calls))
    run = run or ChiefRun(CELLS, protocol, Platform(), None, None, "20261128T000000Z-abcdef")
    path = journal.path_of(tmp_path / "r", run.run_id)
    log = (
        journal.Journal.reopen(path)
        if path.exists()
        else journal.Journal.create(path, {"run_id": run.run_id})
    )

    def stop() -> str | None:
        gone = lease.lost()
        return None if gone is None else gone.text()

    with log:
        result = measure(run, tmp_path / "r", config, lease, log, stop)  # type: ignore[arg-type]
    return result, calls, path


def test_a_lost_task_fails_its_cell_and_starts_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = Protocol(processes=2, peak=False)
    result, calls, _ = _measure(tmp_path, FakeLease(lose_after=2), monkeypatch, protocol)
    assert len(calls) == 2  # the second cell started and failed; nothing after it
    rows = {r.cell.cell_id: r for r in result.rows}
    first, second, third = (rows[c.id] for c in CELLS)
    assert first.status == Status.OK
    assert second.status == Status.FAILED and "worker 1 on node2 was lost at" in second.reason
    assert third.status == Status.NOT_MEASURED
    assert third.reason.startswith("not started: worker 1 on node2 was lost at")
    assert "worker 1 on node2" in result.stopped and exit_code(result) == 1
    stored = pd.read_parquet(tmp_path / "r" / "cells")
    assert sorted(stored.status) == ["failed", "not measured", "ok"]  # every row written
    assert set(stored.nodes) == {2} and set(stored.link_gbps) == {0.94}
    assert set(stored.placement) == {"worker 0@node1, worker 1@node2"}


def test_the_budget_starts_no_cell_it_cannot_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = Protocol(processes=2, peak=False, budget_min=1e-9)
    result, calls, _ = _measure(tmp_path, FakeLease(), monkeypatch, protocol)
    assert calls == []
    assert {r.status for r in result.rows} == {Status.NOT_MEASURED}
    assert all("the budget (1e-09 min) was spent" in r.reason for r in result.rows)
    assert exit_code(result) == 0 and not result.stopped


def test_resume_measures_only_the_missing_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = Protocol(processes=2, peak=False)
    first, calls, path = _measure(tmp_path, FakeLease(lose_after=4), monkeypatch, protocol)
    assert len(calls) == 4 and exit_code(first) == 1
    entries = journal.read(path)[1:]
    ends, _ = replayed(entries, CELLS)
    assert len(ends) == 3  # three processes measured; the failed one is measured again
    run = ChiefRun(CELLS, protocol, Platform(), None, None, first.run_id, ends, None, 1.0, 1)
    second, again, _ = _measure(tmp_path, FakeLease(), monkeypatch, protocol, run)
    measured = {(name.split("-")[0], cid) for name, cid in calls[:3]}
    assert len(again) == 3 and not measured & {(name.split("-")[0], cid) for name, cid in again}
    assert exit_code(second) == 0
    assert all(r.status == Status.OK and r.spread.processes == 2 for r in second.rows)
    stored = pd.read_parquet(tmp_path / "r" / "cells")
    assert len(stored) == 3 and set(stored.status) == {"ok"}  # the first session's rows replaced
    windows = pd.read_parquet(tmp_path / "r" / "windows")
    assert len(windows) == 6  # one per process, none twice


def test_where_names_every_task_and_the_slowest_link() -> None:
    class Probes(FakeLease):
        def probe(self, task: str) -> float | None:
            return {"worker 0": 9.5}.get(task)

    assert place(PS_TWO_NODES, Probes()) == ClusterPlace(  # type: ignore[arg-type]
        2, "chief 0@node1, worker 0@node2, ps 0@node1", 9.5
    )
    assert place(PS_TWO_NODES, FakeLease(gbps=None)).link_gbps is None  # type: ignore[arg-type]
    one = ClusterConfig((("worker", ("n1:8888", "n1:8889")),), "worker", 0)
    assert place(one, FakeLease()) == ClusterPlace(1, "worker 0@n1, worker 1@n1", None)  # type: ignore[arg-type]


def test_the_budget_counts_earlier_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = Protocol(processes=2, peak=False, budget_min=1.0)
    run = ChiefRun(CELLS, protocol, Platform(), None, None, "20261128T000000Z-abcdef", elapsed_s=61.0)
    result, calls, _ = _measure(tmp_path, FakeLease(), monkeypatch, protocol, run)
    assert calls == [] and {r.status for r in result.rows} == {Status.NOT_MEASURED}


def test_resume_measures_a_process_whose_worker_recorded_a_failure_again() -> None:
    from harness.launch.instances.resume import encode_end

    row = dataclasses.replace(cell_row(CELLS[0], Protocol()), status=Status.FAILED, reason="x")
    ok = dataclasses.replace(row, status=Status.OK, reason="")
    entries = [
        {"kind": "process", "pass": 0, "end": encode_end(CellEnd(CELLS[0], Event.RECORD, row=row))},  # type: ignore[arg-type]
        {"kind": "process", "pass": 0, "end": encode_end(CellEnd(CELLS[1], Event.RECORD, row=ok))},  # type: ignore[arg-type]
        {"kind": "process", "pass": 1, "end": encode_end(CellEnd(CELLS[1], Event.FAILED, reason="y"))},  # type: ignore[arg-type]
    ]
    ends, peak = replayed(entries, CELLS)
    assert [(k, e.cell.id) for k, e in ends] == [(0, CELLS[1].id)] and peak is None


def test_a_task_that_never_joined_fails_the_first_cell_and_starts_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = "it never joined the chief's run lease within 30 s of Slurm reporting node2 down"
    result, calls, path = _measure(
        tmp_path, FakeLease(lose_after=0, why=why), monkeypatch, Protocol(peak=False)
    )
    assert calls == []
    rows = {r.cell.cell_id: r for r in result.rows}
    assert rows[CELLS[0].id].status == Status.FAILED
    assert (
        rows[CELLS[0].id].reason.startswith("worker 1 on node2 was lost at")
        and why in rows[CELLS[0].id].reason
    )
    assert {rows[c.id].status for c in CELLS[1:]} == {Status.NOT_MEASURED}
    assert all(rows[c.id].reason.startswith("not started: worker 1 on node2") for c in CELLS[1:])
    assert exit_code(result) == 1
    ends, _ = replayed(journal.read(path)[1:], CELLS)
    assert ends == ()  # --resume measures every process


def test_a_peers_failed_part_or_a_lost_task_is_named_first_in_the_chiefs_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.launch.nodes import real_cluster

    class Told(FakeLease):
        def failed(self, name: str) -> str | None:
            return f"worker 1 on node2: its part failed: OOM in {name}" if self.started else None

    failed_row = flatten(
        dataclasses.replace(cell_row(CELLS[0], Protocol()), status=Status.FAILED, reason="Unavailable")
    )

    def task(cell: Cell, options: object, name: str, config: object, abort: Any) -> Iterator[EventLine]:
        while not abort():
            time.sleep(0.01)
        yield {"event": "failed", "cell_id": cell.id, "facts": None, "reason": abort()}
        yield {"event": "record", "cell_id": cell.id, "facts": None, "row": failed_row}
        yield {"event": "failed", "cell_id": cell.id, "facts": None, "reason": "deadline"}

    monkeypatch.setattr(real_cluster, "run_cluster_task", task)
    lease = Told()
    told = "worker 1 on node2: its part failed: OOM in p0-00000"
    events = list(real_cluster.chief_launcher(TWO_NODES, lease)(CELLS[0], None, "p0-00000"))  # type: ignore[arg-type]
    assert lease.started == ["p0-00000"] and events[0]["reason"] == told
    assert events[1]["row"]["reason"] == events[1]["reason"] == f"{told}; the chief's worker: Unavailable"
    lost = FakeLease(lose_after=1)  # a loss comes before any part's failure
    events = list(real_cluster.chief_launcher(TWO_NODES, lost)(CELLS[0], None, "p0-00000"))  # type: ignore[arg-type]
    assert events[2]["reason"] == f"{lost.gone.text()}; the chief's worker: deadline"


def test_a_full_disk_on_the_chief_ends_every_task_and_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import threading

    from harness.errors import HarnessError
    from harness.launch.cells.local_cluster import free_ports
    from harness.launch.nodes.lease import ChiefEnd, ChiefLink
    from harness.launch.sweep.run_params import Work
    from harness.launch.sweep.sweep_run import Request, measure_as_chief
    from harness.results.store import RunFiles

    ports = free_ports(2)
    spec = (("worker", tuple(f"127.0.0.1:{p}" for p in ports)),)
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    protocol = Protocol(processes=2, peak=False)
    monkeypatch.setattr(chief, "chief_launcher", lambda c, lease: _launcher(lease, protocol, []))
    write = RunFiles.write_windows

    def full(self: RunFiles, seq: int, windows: list[Any]) -> object:
        if seq >= 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, seq, windows)

    monkeypatch.setattr(RunFiles, "write_windows", full)
    ends: list[ChiefEnd | None] = []

    def peer() -> None:
        link = ChiefLink(ClusterConfig(spec, "worker", 1))
        assert link.connect(20, 0.1) is None
        while not isinstance(end := link.next(20), ChiefEnd | None):
            pass
        ends.append(end)

    thread = threading.Thread(target=peer, daemon=True)
    thread.start()
    work = Work(CELLS, protocol, Platform(), machine=None)
    out = tmp_path / "r"
    with pytest.raises(HarnessError) as e:
        measure_as_chief(work, Request(out), ClusterConfig(spec, "worker", 0))
    thread.join(20)
    assert e.value.exit_code == 1 and "the disk is full" in str(e.value)
    run_id = journal.read(next((out / "journal").glob("*.jsonl")))[0]["run_id"]
    assert (
        f"from every task: python -m harness run --cluster tf_config --resume {run_id} --results {out}"
        in str(e.value)
    )
    assert ends == [ChiefEnd(True, 1, "the chief's run finished with exit code 1")]  # nothing left running
    ends_kept, _ = replayed(journal.read(next((out / "journal").glob("*.jsonl")))[1:], CELLS)
    assert len(ends_kept) == 1  # the process measured before the disk filled: --resume keeps it
