"""A run in turns journaled and killed (fake instances: no process, no TensorFlow), then resumed from
its journal: the instances kept, the rest measured, the same rows and ratios as a run never killed;
a journal of another machine refused, naming what differs (its facts one by one); the journal's
machine name kept on the resumed run's rows."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from harness.contract.columns import flatten
from harness.contract.events import Event
from harness.contract.machine import PROTOCOL_VERSION, MachineFacts
from harness.contract.records import CellRow, Checks, Status
from harness.errors import HarnessError
from harness.launch.cells.peak import PeakLog
from harness.launch.cells.runner import CellEnd
from harness.launch.instances import resume
from harness.launch.sweep import budget
from harness.launch.sweep.run_params import Hooks, Identity, Output, Work
from harness.launch.system.platform import HostMachine, instance_id
from harness.results import journal
from harness.results.measurement import cell_row
from harness.results.store import read_cells
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from tests.harness.launch.sweep.test_budget import BROKEN_DOWN, DEFAULT, ONE, TWO, Clock, _fake

pytestmark = pytest.mark.usefixtures("no_git")

MACHINE = {
    "cpu": "AMD EPYC",
    "cpus": "2",
    "gpus": "",
    "suite": "0.1.0+x",
    "tensorflow": "2.21.0",
    "keras": "3.15.1",
}
CELLS = [DEFAULT, ONE, TWO, Cell(model="dense", strategy="default", batch=64)]
PROTOCOL = Protocol(processes=2, max_processes=6, budget_min=3.0, blocks=2, max_live=2, peak=False)
RACED = tuple(c.id for c in CELLS)
"""Every cell a contender, two live at most: two races, then the second stage (r0)."""
SPEED = {DEFAULT.id: 1000.0, ONE.id: 1000.0, TWO.id: 1100.0, CELLS[3].id: 1010.0}


class Killed(BaseException):
    """The parent's SIGKILL, as the fake sees it: nothing after it runs (no KeyboardInterrupt)."""


def _journaled(root: Path, run_id: str) -> journal.Journal:
    entry = resume.plan_entry(run_id, "2026-11-25", CELLS, PROTOCOL, Platform(), None, MACHINE, "run", RACED)
    return journal.Journal.create(journal.path_of(root, run_id), entry)


def _run(root: Path, clock: Clock, run_id: str, resumed: resume.Resumed | None = None):  # type: ignore[no-untyped-def]
    log = journal.Journal.reopen(resumed.path) if resumed else _journaled(root, run_id)
    with log:
        return budget.run_in_turns(
            Work(tuple(CELLS), PROTOCOL, Platform(), contenders=RACED),
            Output(root, log),
            Identity(run_id, resumed),
            Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
        )


def _killed_at(monkeypatch: pytest.MonkeyPatch, calls: list[str], at: int) -> None:
    """The fake instance ``at`` (0-based) kills the parent: no row is written after it."""
    fake = budget.run_instance

    def dies(*args, **kwargs):  # type: ignore[no-untyped-def]
        if len(calls) == at:
            raise Killed
        return fake(*args, **kwargs)

    monkeypatch.setattr(budget, "run_instance", dies)


def _tables(root: Path) -> dict[str, pd.DataFrame]:
    cells = pd.read_parquet(root / "cells").drop(columns=["timestamp", "run_id", "resumes"])
    ratios = pd.read_parquet(root / "ratios").drop(columns=["timestamp", "run_id", "resumes"])
    windows = pd.read_parquet(root / "windows").drop(columns=["run_id"])
    return {"cells": cells.set_index("cell_id").sort_index(), "ratios": ratios, "windows": windows}


@pytest.mark.parametrize("kills", [(3,), (1, 5)], ids=["once", "twice"])
def test_a_killed_run_resumed_measures_what_one_never_killed_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kills: tuple[int, ...]
) -> None:
    clock = Clock()
    calls = _fake(monkeypatch, PROTOCOL, clock, SPEED, noise=0.05)
    _run(tmp_path / "whole", clock, "20261125T000000Z-aaaaaa")
    expected = _tables(tmp_path / "whole")
    assert len(calls) > max(kills) + 1 and [c for c in calls if c.startswith("r")]  # reaches the race
    measured = len(calls)

    root, run_id = tmp_path / "killed", "20261125T000000Z-bbbbbb"
    calls.clear()
    clock.now = 0.0
    fake = budget.run_instance
    resumed = None
    for at in kills:
        _killed_at(monkeypatch, calls, at)
        with pytest.raises(Killed):
            _run(root, clock, run_id, resumed)
        for table in ("cells", "ratios", "costs"):  # a SIGKILL writes none of them
            for f in (root / table).rglob("*.parquet"):
                f.unlink()
        monkeypatch.setattr(budget, "run_instance", fake)
        resumed = resume.load(root, "latest", lambda: MACHINE)
        assert resumed.instances() == at and not resumed.ended
    assert resumed is not None
    result = _run(root, clock, run_id, resumed)

    got = _tables(root)
    assert len(calls) == measured and result.run_id == run_id  # no instance measured twice
    pd.testing.assert_frame_equal(got["cells"], expected["cells"])
    pd.testing.assert_frame_equal(got["ratios"], expected["ratios"])
    pd.testing.assert_frame_equal(got["windows"], expected["windows"])
    assert (pd.read_parquet(root / "cells").resumes == len(kills)).all()
    (cost,) = pd.read_parquet(root / "costs").to_dict("records")
    assert cost["resumes"] == len(kills) and cost["wall_s"] == pytest.approx(clock.now)
    kinds = [e["kind"] for e in journal.read(resumed.path)]
    assert kinds.count("resumed") == len(kills) and kinds[-1] == "end"


def test_a_finished_run_resumed_rebuilds_its_rows_from_the_journal_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    calls = _fake(monkeypatch, PROTOCOL, clock, SPEED)
    _run(tmp_path, clock, "20261125T000000Z-cccccc")
    expected, measured = _tables(tmp_path), len(calls)
    for table in ("cells", "ratios", "windows"):
        for f in (tmp_path / table).rglob("*.parquet"):
            f.unlink()

    resumed = resume.load(tmp_path, "20261125T000000Z-cccccc", lambda: MACHINE)
    assert resumed.ended
    _run(tmp_path, clock, "20261125T000000Z-cccccc", resumed)

    assert len(calls) == measured  # nothing measured again
    got = _tables(tmp_path)
    for table in ("cells", "ratios", "windows"):
        pd.testing.assert_frame_equal(got[table], expected[table])


def test_a_run_killed_during_its_step_breakdowns_does_not_time_one_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    calls = _fake(monkeypatch, PROTOCOL, clock, SPEED)
    _run(tmp_path / "whole", clock, "20261125T000000Z-eeeeee")
    expected, measured = _tables(tmp_path / "whole"), len(calls)
    fake, broken = budget.measure_apart, []

    def dies_at_second(cell, *args):  # type: ignore[no-untyped-def]
        if len(broken) == 1:
            raise Killed
        broken.append(cell.id)
        return fake(cell, *args)

    root, run_id = tmp_path / "killed", "20261125T000000Z-ffffff"
    calls.clear()
    clock.now = 0.0
    monkeypatch.setattr(budget, "measure_apart", dies_at_second)
    with pytest.raises(Killed):
        _run(root, clock, run_id)
    resumed = resume.load(root, "latest", lambda: MACHINE)
    broken.append("")  # no kill any more
    result = _run(root, clock, run_id, resumed)

    assert len(calls) == measured and len(broken) == 1 + len(CELLS)  # no instance, no breakdown twice
    assert [r.breakdown.compute_s for r in result.rows] == [BROKEN_DOWN.compute_s] * len(CELLS)
    pd.testing.assert_frame_equal(_tables(root)["cells"], expected["cells"])


def test_a_journal_of_another_machine_or_software_is_refused_naming_what_differs(tmp_path: Path) -> None:
    _journaled(tmp_path, "20261125T000000Z-dddddd").close()
    elsewhere = {**MACHINE, "cpu": "Intel Xeon Platinum 8480+", "tensorflow": "2.20.0"}

    with pytest.raises(HarnessError) as e:
        resume.load(tmp_path, "latest", lambda: elsewhere)

    assert "CPU model: AMD EPYC in the journal, Intel Xeon Platinum 8480+ here" in str(e.value)
    assert "TensorFlow version: 2.21.0 in the journal, 2.20.0 here" in str(e.value)
    assert "keras" not in str(e.value).lower()


def test_an_unknown_run_is_refused_naming_the_journals_there(tmp_path: Path) -> None:
    _journaled(tmp_path, "20261125T000000Z-eeeeee").close()
    with pytest.raises(HarnessError, match="20261125T000000Z-eeeeee"):
        resume.load(tmp_path, "20991231T000000Z-ffffff", lambda: MACHINE)
    with pytest.raises(HarnessError, match="no run journal"):
        resume.load(tmp_path / "elsewhere", "latest", lambda: MACHINE)


def test_a_full_disk_stops_the_run_and_its_journal_resumes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from harness.results.store import RunFiles

    clock = Clock()
    calls = _fake(monkeypatch, PROTOCOL, clock, SPEED, noise=0.05)
    _run(tmp_path / "whole", clock, "20261125T000000Z-aaaaaa")
    expected, measured = _tables(tmp_path / "whole"), len(calls)
    calls.clear()
    clock.now = 0.0
    write = RunFiles.write_windows

    def full(self: RunFiles, seq: int, windows: list[dict[str, object]]) -> object:
        if seq >= 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, seq, windows)  # type: ignore[arg-type]

    monkeypatch.setattr(RunFiles, "write_windows", full)
    root = tmp_path / "full"
    with pytest.raises(OSError) as e:
        _run(root, clock, "20261125T000000Z-bbbbbb")
    assert e.value.errno == errno.ENOSPC
    monkeypatch.setattr(RunFiles, "write_windows", write)  # space freed

    resumed = resume.load(root, "latest", lambda: MACHINE)
    assert resumed.instances() >= 1
    _run(root, clock, "20261125T000000Z-bbbbbb", resumed)

    got = _tables(root)
    assert len(calls) == measured
    for table in ("cells", "ratios", "windows"):
        pd.testing.assert_frame_equal(got[table], expected[table])


OLD_RECORD_ROW = {  # a worker's record row as the version before typed rows journaled it: flat columns
    "cell_id": DEFAULT.id,
    "model": "dense",
    "loss": "auto",
    "data": "synthetic",
    "strategy": "default",
    "cross_device_ops": "none",
    "communication": "none",
    "replicas": 1,
    "workers": 1,
    "ps": 0,
    "tenants": 1,
    "tenant_framework": "none",
    "per_replica_batch": 32,
    "global_batch": 32,
    "effective_batch": 32,
    "accum_steps": 1,
    "loop": "ctl",
    "steps_per_execution": 10,
    "precision": "float32",
    "scaling": "weak",
    "optimizer": "SGD(learning_rate=0.01)",
    "learning_rate": 0.01,
    "flops_per_example": 409088,
    "flops_source": "analytic",
    "flops_analytic": 409088,
    "window_target_s": 1.0,
    "repeats": 5,
    "warmup_windows": 1,
    "min_processes": 2,
    "max_processes": 6,
    "device_kind": "CPU",
    "device_name": "AMD EPYC",
    "host_cores": 2,
    "tf_version": "2.21.0",
    "fingerprint": "0123456789abcdef",
    "cores_per_worker": 2,
    "oversubscribed": False,
    "status": "ok",
    "reason": "",
    "effective_cross_device_ops": "none",
    "examples_per_sec": 1234.5,
    "cv_within_process": 0.01,
    "window_steps": 40,
    "startup_s": 0.5,
    "compile_s": 1.25,
    "final_loss": 0.75,
    "optimizer_updates_per_sec": 1234.5 / 32,
    "weights_digest": "abc123",
    "jit_compile": False,
    "device_count": 1,
    "logical_devices": False,
    "hosts": 1,
    "updates_run": 400,
    "nccl_transport": None,
    "forked": True,
}


def test_a_journal_of_the_version_before_typed_rows_decodes(tmp_path: Path) -> None:
    # the ends as that version's encode_end wrote them: the row a dict of columns, {} for a failure
    window = {"cell_id": DEFAULT.id, "worker": 0, "repeat": 0, "window_s": 1.0, "window_steps": 40}
    record = {
        "cell_id": DEFAULT.id,
        "event": "record",
        "row": OLD_RECORD_ROW,
        "windows": [window],
        "reason": "",
        "facts": {"fingerprint": "0123456789abcdef"},
        "wall_s": 12.5,
        "launch_s": 2.0,
    }
    failed = {
        "cell_id": ONE.id,
        "event": "failed",
        "row": {},
        "windows": [],
        "reason": "worker exited with signal SIGKILL",
        "facts": None,
        "wall_s": 3.0,
        "launch_s": 1.0,
    }
    cells = {c.id: c for c in CELLS}
    lines = [json.dumps(e, separators=(",", ":")) for e in (record, failed)]  # as journaled

    end = resume.decode_end(json.loads(lines[0]), cells)
    assert end.cell == DEFAULT and end.event == Event.RECORD and end.windows == [window]
    assert (end.wall_s, end.launch_s, end.reason) == (12.5, 2.0, "")
    row = end.row
    assert isinstance(row, CellRow)
    assert row.cell.cell_id == DEFAULT.id and row.status is Status.OK and row.reason == ""
    assert row.examples_per_sec.value == 1234.5 and row.examples_per_sec.low is None
    assert row.spread.cv_within_process == 0.01 and row.timing.compile_s == 1.25
    assert row.ran.forked is True and row.checks.weights_digest == "abc123"
    assert row.machine is not None and row.machine.fingerprint == "0123456789abcdef"
    columns = flatten(row)
    assert {k: columns[k] for k in OLD_RECORD_ROW} == OLD_RECORD_ROW  # the same values back
    rest = {k: v for k, v in columns.items() if k not in OLD_RECORD_ROW and v is not None}
    assert rest == {"run_id": "", "timestamp": "", "suite_version": ""}  # the parent's, set as it writes
    assert resume.encode_end(end)["row"] == columns  # journaled again as the same columns

    assert end.report == {}  # that version journaled no report

    gone = resume.decode_end(json.loads(lines[1]), cells)
    assert gone.cell == ONE and gone.event == Event.FAILED and gone.row is None
    assert gone.reason == "worker exited with signal SIGKILL" and gone.windows == []


def test_a_record_s_report_and_a_nan_loss_are_journaled_as_they_came() -> None:
    row = replace(cell_row(DEFAULT, Protocol()), status=Status.INVALID, checks=Checks(final_loss=math.nan))
    end = CellEnd(DEFAULT, Event.RECORD, row, {"weights_path": "w.npz"}, [], "", None, 1.0, 0.5)
    back = resume.decode_end(json.loads(json.dumps(resume.encode_end(end))), {DEFAULT.id: DEFAULT})
    assert back.report == {"weights_path": "w.npz"} and back.row is not None
    assert back.row.status is Status.INVALID and math.isnan(back.row.checks.final_loss or 0.0)


FACTS = MachineFacts(
    cpu_model="AMD EPYC", cpu_flags="avx2 fma sse2", cores=2, caches="L2 512 KiB", memory_gib=24
)
NAMED = {**MACHINE, "facts": FACTS.to_json(), "name": "lab-epyc"}
"""A plan's machine since 2026-11-28: its facts and name too."""


def _journaled_as(root: Path, run_id: str, machine: dict[str, str]) -> None:
    entry = resume.plan_entry(run_id, "2026-11-28", CELLS, PROTOCOL, Platform(), None, machine, "run")
    journal.Journal.create(journal.path_of(root, run_id), entry).close()


def test_other_facts_are_refused_each_named_in_words(tmp_path: Path) -> None:
    _journaled_as(tmp_path, "20261128T000000Z-aaaaaa", NAMED)
    halved = replace(FACTS, cores=1, cpu_quota=1.0, cpu_flags="avx2 avx512f sse2")
    here = {**MACHINE, "facts": halved.to_json()}  # no name: this host's is not compared

    with pytest.raises(HarnessError) as e:
        resume.load(tmp_path, "latest", lambda: here)

    text = str(e.value)
    assert "usable cores: 2 in the journal, 1 here" in text
    assert "cgroup CPU quota: none in the journal, 1.0 here" in text
    assert "CPU flags: fma only in the journal, avx512f only here" in text
    assert "memory" not in text and "machine name" not in text and e.value.exit_code == 2


def test_equal_facts_resume_whatever_this_host_would_be_called(tmp_path: Path) -> None:
    _journaled_as(tmp_path, "20261128T000000Z-bbbbbb", NAMED)
    resumed = resume.load(tmp_path, "latest", lambda: {**MACHINE, "facts": FACTS.to_json()})
    assert resume.host_of(resumed.plan, None, replace(FACTS, cores=64)) == HostMachine(
        "lab-epyc", FACTS, instance_id()
    )
    assert resume.host_of(resumed.plan, "lab-epyc", FACTS).name == "lab-epyc"  # the same name: fine


def test_another_machine_name_with_resume_is_refused_naming_the_runs(tmp_path: Path) -> None:
    _journaled_as(tmp_path, "20261128T000000Z-cccccc", NAMED)
    plan = resume.load(tmp_path, "latest", lambda: {**MACHINE, "facts": FACTS.to_json()}).plan
    with pytest.raises(HarnessError) as e:
        resume.host_of(plan, "other box", FACTS)
    assert e.value.exit_code == 2
    assert str(e.value).startswith(
        "Received --machine 'other box' with --resume; run 20261128T000000Z-cccccc"
    )
    assert "as machine 'lab-epyc'" in str(e.value)


def test_a_journal_older_than_machine_facts_resumes_with_todays(tmp_path: Path) -> None:
    _journaled(tmp_path, "20261125T000000Z-dddddd").close()  # no "facts", no "name"
    plan = resume.load(tmp_path, "latest", lambda: {**MACHINE, "facts": FACTS.to_json()}).plan
    assert resume.host_of(plan, None, FACTS) == HostMachine(FACTS.default_name, FACTS, instance_id())
    assert resume.host_of(plan, "lab-epyc", FACTS) == HostMachine("lab-epyc", FACTS, instance_id())


def test_a_resumed_run_keeps_the_journals_name_on_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    _fake(monkeypatch, PROTOCOL, clock, SPEED)
    run_id = "20261128T000000Z-eeeeee"
    _journaled_as(tmp_path, run_id, NAMED)
    resumed = resume.load(tmp_path, run_id, lambda: {**MACHINE, "facts": FACTS.to_json()})
    host = resume.host_of(resumed.plan, None, FACTS)
    with journal.Journal.reopen(resumed.path) as log:
        budget.run_in_turns(
            Work(tuple(CELLS), PROTOCOL, Platform(), machine=host),
            Output(tmp_path, log),
            Identity(run_id, resumed),
            Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
        )
    cells = read_cells(tmp_path)
    assert set(cells["machine"]) == {"lab-epyc"} and set(cells["machine_id"]) == {FACTS.short_id}
    assert set(cells["machine_facts"]) == {FACTS.to_json()} and set(cells["protocol_version"]) == {
        PROTOCOL_VERSION
    }
