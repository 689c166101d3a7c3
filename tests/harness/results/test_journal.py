"""The run journal: lines appended durably, a last line cut short dropped on reading and cut off on
reopening, a corrupt line in the middle named, journals found by id or ``latest``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.results import journal


def test_entries_read_back_in_order_after_the_plan(tmp_path: Path) -> None:
    path = journal.path_of(tmp_path, "20261125T000000Z-aaaaaa")
    with journal.Journal.create(path, {"run_id": "r"}) as log:
        log.append({"kind": "instance", "elapsed_s": 1.5, "x": [1, 2]})
        log.append({"kind": "end", "elapsed_s": 2.0})

    entries = journal.read(path)

    assert [e["kind"] for e in entries] == ["plan", "instance", "end"]
    assert entries[0]["run_id"] == "r" and entries[1]["x"] == [1, 2]
    with pytest.raises(FileExistsError):  # a run's journal is never started twice
        journal.Journal.create(path, {"run_id": "r"})


def test_a_last_line_cut_short_is_dropped_then_cut_off_when_reopened(tmp_path: Path) -> None:
    path = journal.path_of(tmp_path, "20261125T000000Z-aaaaaa")
    with journal.Journal.create(path, {"run_id": "r"}) as log:
        log.append({"kind": "instance", "elapsed_s": 1.0})
    with path.open("ab") as f:  # the write a SIGKILL or a full disk interrupted
        f.write(b'{"kind":"instance","elapsed_s":2.0,"ends":{"a"')

    assert [e["kind"] for e in journal.read(path)] == ["plan", "instance"]
    with journal.Journal.reopen(path) as log:
        log.append({"kind": "resumed", "elapsed_s": 1.0})
    assert [e["kind"] for e in journal.read(path)] == ["plan", "instance", "resumed"]


def test_a_corrupt_line_in_the_middle_is_named(tmp_path: Path) -> None:
    path = journal.path_of(tmp_path, "20261125T000000Z-aaaaaa")
    journal.Journal.create(path, {"run_id": "r"}).close()
    with path.open("ab") as f:
        f.write(b"garbage\n" + b'{"kind":"end"}\n')

    with pytest.raises(HarnessError, match="corrupt at line 2"):
        journal.read(path)


def test_a_file_without_a_plan_is_not_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"kind":"end"}\n')
    with pytest.raises(HarnessError, match="no plan line"):
        journal.read(path)


def test_journals_are_found_by_id_or_latest(tmp_path: Path) -> None:
    for run_id in ("20261125T000000Z-aaaaaa", "20261126T000000Z-bbbbbb"):
        journal.Journal.create(journal.path_of(tmp_path, run_id), {"run_id": run_id}).close()

    assert journal.find(tmp_path, "latest").name == "20261126T000000Z-bbbbbb.jsonl"
    assert journal.find(tmp_path, "20261125T000000Z-aaaaaa").name == "20261125T000000Z-aaaaaa.jsonl"
    with pytest.raises(HarnessError, match="20261126T000000Z-bbbbbb"):
        journal.find(tmp_path, "nope")
