"""A results folder that cannot be corrupted quietly, and histories kept apart: a truncated file is
named by ``check``, ``compare`` and ``report`` while the other rows are read; ``ab``'s rows (under
``results/ab``, or among the runs' rows in older folders) never change what ``compare`` says."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from harness.commands import main
from harness.contract.columns import unflatten
from harness.contract.records import CellRow
from harness.results import store
from harness.results.store import AB_FOLDER, RunFiles

RUNS = 12


def _history(root: Path, runs: int = RUNS) -> list[Path]:
    """``runs`` daily runs of two cells on one machine; returns the cell files written."""
    paths = []
    for k in range(runs):
        day = f"2026-01-{k + 1:02d}"
        run_id = f"{day.replace('-', '')}T000000Z-{k:06d}"
        files = RunFiles(root, day, run_id)
        for i, cell in enumerate(("cnn/a", "cnn/b")):
            eps = 1000.0 + 100 * i + (k % 3)
            row = {
                "run_id": run_id,
                "timestamp": f"{day}T00:00:00",
                "cell_id": cell,
                "model": "cnn",
                "status": "ok",
                "examples_per_sec": eps,
                "process_examples_per_sec": [eps],
                "fingerprint": "fp",
            }
            paths.append(files.write_row(i, unflatten(CellRow, row)))
    return paths


def _ab_rows(files: RunFiles) -> None:
    """An ab of the two cells, after the last run, at a quarter of their speed."""
    for i, cell in enumerate(("cnn/a", "cnn/b")):
        for side in ("A", "B"):
            files.write_row(
                2 * i + (side == "B"),
                unflatten(
                    CellRow,
                    {
                        "run_id": files.run_id,
                        "ab_id": files.run_id,
                        "ab_side": side,
                        "timestamp": "2026-02-01T00:00:00",
                        "cell_id": cell,
                        "model": "cnn",
                        "status": "ok",
                        "examples_per_sec": 250.0,
                        "fingerprint": "fp",
                    },
                ),
            )


def _call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_compare_says_the_same_before_and_after_an_ab_in_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "results"
    _history(root)
    before = _call("compare", "--results", str(root))
    assert before[0] == 0 and "cnn/a" in before[1]

    _ab_rows(RunFiles(root / AB_FOLDER, "2026-02-01", "20260201T000000Z-ab0000"))
    assert _call("compare", "--results", str(root)) == before
    _ab_rows(RunFiles(root, "2026-02-01", "20260201T000000Z-ab0001"))  # where older versions put them
    assert _call("compare", "--results", str(root)) == before


def test_a_truncated_file_is_named_by_every_reader_and_the_other_rows_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "results"
    paths = _history(root)
    bad = paths[5]  # a cell row of the third run
    bad.write_bytes(bad.read_bytes()[:100])

    code, out, err = _call("check", "--results", str(root))
    assert code == 1 and f"damaged: {bad} cannot be read" in out and "1 damaged" in out

    for argv in (("compare",), ("report", "--report-dir", str(tmp_path / "report"))):
        monkeypatch.setattr(store, "DAMAGED", {})  # each command names it once, as a process does
        monkeypatch.setattr("harness.commands.report.write_report", lambda *a, **k: [])
        code, out, err = _call(*argv, "--results", str(root))
        assert code in (0, 3) and f"warning: {bad} cannot be read" in err and f"move it out of {root}" in err
    assert len(store.read_cells(root)) == 2 * RUNS - 1


def test_check_notes_a_run_to_resume_and_a_leftover_temporary_file(tmp_path: Path) -> None:
    from harness.results import journal

    root = tmp_path / "results"
    _history(root, runs=1)
    journal.Journal.create(journal.path_of(root, "20260301T000000Z-ffffff"), {"run_id": "x"}).close()
    (root / "cells" / ".abc.tmp").write_bytes(b"half")

    code, out, _ = _call("check", "--results", str(root))

    assert code == 0 and "0 damaged, 2 note(s)" in out
    assert "python -m harness run --resume 20260301T000000Z-ffffff" in out
    assert "temporary file of a write that was interrupted" in out


def test_check_replays_a_runs_turns_under_the_disturbance_rule(tmp_path: Path) -> None:
    import dataclasses

    from harness.formulas.turns import Turn
    from harness.results import journal

    root = tmp_path / "results"
    _history(root, runs=1)
    # two blocks on a 16-core host: the kernel and the waiting member used 0.6 CPUs in block 0 (no
    # other program, 13 CPUs idle: kept), xz 4.0 CPUs in block 1 (past a quarter CPU per idle CPU,
    # 3.0 with 12 idle: dropped)
    turns = [
        Turn(0, "a", 0.2, 100.0, 0.08, 0.04, 13.0, foreign_cpu_s=0.0),
        Turn(0, "b", 0.2, 100.0, 0.0, 0.0, 13.0, foreign_cpu_s=0.0),
        Turn(1, "a", 0.2, 100.0, 0.8, 0.0, 12.0, "xz[9]", 0.8, 0.8),
        Turn(1, "b", 0.2, 100.0, 0.0, 0.0, 13.0, foreign_cpu_s=0.0),
    ]
    run_id = "20260301T000000Z-eeeeee"
    with journal.Journal.create(journal.path_of(root, run_id), {"run_id": run_id}) as j:
        j.append({"kind": "instance", "instance": {"turns": [dataclasses.asdict(t) for t in turns]}})

    code, out, _ = _call("check", "--results", str(root))

    assert code == 0
    assert f"run {run_id}: 1 of 2 blocks kept in turns" in out
    assert "busiest other program in disturbed turns: xz[9], 4.00 CPUs" in out
