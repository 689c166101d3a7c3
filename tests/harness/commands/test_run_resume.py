"""``run --resume`` and the run's first lines, as a user types them (no process: the run itself
is replaced): the run id first, the flags a resume refuses, a full disk's message, ``--machine``
checked before any work and, with ``--resume``, against the journal's name."""

from __future__ import annotations

import contextlib
import errno
import io
from pathlib import Path
from typing import Any

import pytest

from harness.commands import main


def _call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No git, no nvidia-smi: the suite's version and the machine without a process."""
    monkeypatch.setattr("harness.launch.cells.runner.git_sha", lambda: "0123456789ab")
    monkeypatch.setattr("harness.launch.system.platform.gpu_models", lambda listing=None: [])
    monkeypatch.setattr("harness.launch.system.platform.gpu_query", lambda: "")


def test_a_full_disk_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_processes: None
) -> None:
    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "results" / "x"))

    monkeypatch.setattr("harness.launch.sweep.sweep_run.run_in_turns", full)
    code, out, err = _call("run", "--sweep", "smoke", "--no-fork", "--results", str(tmp_path / "results"))

    first = out.splitlines()[0]
    assert first.startswith("run 20") and "sweep 'smoke'" in first  # the run id comes first
    run_id = first.split()[1].rstrip(":")
    assert code == 1 and "the disk is full" in err
    assert f"python -m harness run --resume {run_id} --results {tmp_path / 'results'}" in err
    assert (tmp_path / "results" / "journal" / f"{run_id}.jsonl").is_file()


def test_resume_refuses_selection_flags_naming_them(tmp_path: Path, no_processes: None) -> None:
    code, _, err = _call(
        "run", "--resume", "latest", "--sweep", "smoke", "--budget-min", "3", "--results", str(tmp_path)
    )
    assert (
        code == 2
        and "--sweep, --budget-min with --resume" in err
        and "only --results, --json, --wait-lock, --machine, --dry-run, and on a real cluster" in err
    )


def test_resume_without_a_journal_says_where_it_looked(tmp_path: Path, no_processes: None) -> None:
    code, _, err = _call("run", "--resume", "latest", "--results", str(tmp_path))
    assert code == 2 and f"no run journal under {tmp_path / 'journal'}" in err


def test_resume_dry_run_says_what_is_kept_and_what_is_left(tmp_path: Path, no_processes: None) -> None:
    from harness.launch.cells.runner import suite_version
    from harness.launch.instances import resume
    from harness.launch.system.platform import machine
    from harness.results import journal
    from harness.spec.cell import Cell
    from harness.spec.protocol import Platform, Protocol

    run_id = "20261125T000000Z-aaaaaa"
    plan = resume.plan_entry(
        run_id,
        "2026-11-25",
        [Cell()],
        Protocol(budget_min=10),
        Platform(),
        None,
        machine(suite_version()),
        "run",
    )
    with journal.Journal.create(journal.path_of(tmp_path, run_id), plan) as log:
        log.append({"kind": "instance", "elapsed_s": 150.0, "instance": {}})

    code, out, _ = _call("run", "--resume", "latest", "--results", str(tmp_path), "--dry-run")

    assert code == 0 and out.startswith(f"run {run_id} (resume): 1 cells, 1 group instances already measured")
    assert "2.5 of 10 min of its budget spent" in out


def _journal_of(root: Path, name: str | None) -> str:
    """A journaled run of this machine (its facts; named ``name`` unless None: an older journal)."""
    from harness.launch.cells.runner import suite_version
    from harness.launch.instances import resume
    from harness.launch.system.platform import HostMachine, machine, machine_facts
    from harness.results import journal
    from harness.spec.cell import Cell
    from harness.spec.protocol import Platform, Protocol

    run_id = "20261128T000000Z-aaaaaa"
    here = machine(suite_version(), None if name is None else HostMachine(name, machine_facts()))
    if name is None:
        here.pop("facts")
    plan = resume.plan_entry(
        run_id, "2026-11-28", [Cell()], Protocol(budget_min=10), Platform(), None, here, "run"
    )
    journal.Journal.create(journal.path_of(root, run_id), plan).close()
    return run_id


@pytest.mark.parametrize("name", ["", "   ", "x" * 81, "lab\nbox", "tab\there"])
def test_a_bad_machine_name_stops_before_any_work(tmp_path: Path, no_processes: None, name: str) -> None:
    code, out, err = _call("run", "--sweep", "smoke", "--machine", name, "--results", str(tmp_path / "r"))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"Received --machine {name!r}; expected a name of 1 to 80 printable characters" in err
    assert not (tmp_path / "r").exists()  # nothing made, not even the results folder


def test_a_machine_name_is_taken_by_run_and_a_resume_keeps_the_journals(
    tmp_path: Path, no_processes: None
) -> None:
    code, out, _ = _call(
        "run", "--sweep", "smoke", "--machine", "lab box é", "--results", str(tmp_path), "--dry-run"
    )
    assert code == 0 and out.startswith("run:")
    run_id = _journal_of(tmp_path, "lab box é")

    code, out, _ = _call("run", "--resume", "latest", "--results", str(tmp_path), "--dry-run")
    assert code == 0 and f"run {run_id} (resume)" in out and "machine 'lab box é'" in out
    code, out, _ = _call(
        "run", "--resume", "latest", "--machine", "lab box é", "--results", str(tmp_path), "--dry-run"
    )
    assert code == 0

    code, _, err = _call(
        "run", "--resume", "latest", "--machine", "other", "--results", str(tmp_path), "--dry-run"
    )
    assert code == 2 and err.startswith(f"error: Received --machine 'other' with --resume; run {run_id}")
    assert "as machine 'lab box é'" in err


def test_an_older_journal_resumes_under_this_hosts_name_or_the_one_given(
    tmp_path: Path, no_processes: None
) -> None:
    from harness.launch.system.platform import machine_facts

    _journal_of(tmp_path, None)
    code, out, _ = _call("run", "--resume", "latest", "--results", str(tmp_path), "--dry-run")
    assert code == 0 and f"machine {machine_facts().default_name!r}" in out
    code, out, _ = _call(
        "run", "--resume", "latest", "--machine", "lab", "--results", str(tmp_path), "--dry-run"
    )
    assert code == 0 and "machine 'lab'" in out
