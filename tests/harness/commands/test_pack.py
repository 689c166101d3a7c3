"""Results that travel: ``pack`` puts runs into one file, and every command that reads results takes
``--results`` more than once, a pack file in place of a folder; a run given twice is refused."""

from __future__ import annotations

import contextlib
import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from harness.commands import main
from harness.commands.pack import size_text
from harness.results import store
from harness.results.pack import open_pack
from tests.harness.commands.test_check import _history
from tests.harness.commands.test_predict import _folder as predict_folder
from tests.harness.results.test_pack import RUN_A, RUN_B, write_run


def _call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _split_history(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Twelve daily runs in one folder, and the same runs split: the first six in one folder, the
    last six in another (as two machines' folders, or a colleague's brought over)."""
    whole = tmp_path / "whole"
    _history(whole)
    early, late = tmp_path / "early", tmp_path / "late"
    for run in sorted((whole / "cells").glob("*/*")):  # the history holds cells alone
        target = early if run.parent.name <= "2026-01-06" else late
        shutil.copytree(run, target / "cells" / run.parent.name / run.name)
    return whole, early, late


# ------------------------------------------------------------------------------------------------
# pack
# ------------------------------------------------------------------------------------------------


def test_pack_writes_every_run_to_the_first_run_s_name_here_and_says_what(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    write_run(root, RUN_B)
    monkeypatch.chdir(tmp_path)

    code, out, err = _call("pack", "--results", str(root))

    path = tmp_path / f"{RUN_A}.tar.gz"
    assert (code, err) == (0, "")
    assert out == f"wrote {RUN_A}.tar.gz: 2 runs, 4 cell rows, 16 files, {size_text(path.stat().st_size)}\n"
    assert open_pack(path).manifest.run_ids == (RUN_A, RUN_B)


def test_pack_takes_run_references_and_an_out_file(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    write_run(root, RUN_B)
    out = tmp_path / "travel" / "latest.tar.gz"

    code, text, _ = _call("pack", "--results", str(root), "--runs", "latest", "--out", str(out))

    assert code == 0 and text.startswith(f"wrote {out}: 1 run, 2 cell rows, 8 files, ")
    with tarfile.open(out) as tar:
        assert all(RUN_A not in name for name in tar.getnames())


def test_pack_refuses_an_existing_file_unless_forced_and_a_name_that_is_no_pack(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    out = tmp_path / "a.tar.gz"
    out.write_text("something else")

    code, _, err = _call("pack", "--results", str(root), "--out", str(out))
    assert code == 2 and err == (
        f"error: Received --out={str(out)!r}: the file exists; expected a new file, or --force to overwrite it.\n"
    )
    assert out.read_text() == "something else"
    assert _call("pack", "--results", str(root), "--out", str(out), "--force")[0] == 0
    assert open_pack(out).manifest.run_ids == (RUN_A,)

    code, _, err = _call("pack", "--results", str(root), "--out", str(tmp_path / "a.zip"))
    assert code == 2 and "expected a file name ending .tar.gz" in err
    code, _, err = _call("pack", "--results", str(out), "--out", str(tmp_path / "b.tar.gz"))
    assert code == 2 and "expected a results folder" in err
    code, _, err = _call(
        "pack", "--results", str(root), "--runs", "2020-01-01", "--out", str(tmp_path / "c.tar.gz")
    )
    assert code == 2 and "no run matches" in err and not (tmp_path / "c.tar.gz").exists()


# ------------------------------------------------------------------------------------------------
# The readers, given several roots
# ------------------------------------------------------------------------------------------------


def test_compare_says_the_same_of_one_folder_two_folders_and_a_folder_and_a_pack(tmp_path: Path) -> None:
    whole, early, late = _split_history(tmp_path)
    packed = tmp_path / "late.tar.gz"
    assert _call("pack", "--results", str(late), "--out", str(packed))[0] == 0

    one = _call("compare", "--results", str(whole))
    assert one[0] == 0 and "cnn/a" in one[1]
    assert _call("compare", "--results", str(early), "--results", str(late)) == one
    assert _call("compare", "--results", str(early), "--results", str(packed)) == one


def test_a_run_given_twice_is_refused_by_every_reader(tmp_path: Path) -> None:
    _, early, late = _split_history(tmp_path)
    packed = tmp_path / "early.tar.gz"
    assert _call("pack", "--results", str(early), "--out", str(packed))[0] == 0
    for command in (
        ["compare"],
        ["report"],
        ["check"],
        ["predict", "--model", "cnn", "--strategy", "mirrored"],
    ):
        code, out, err = _call(
            *command, "--results", str(early), "--results", str(late), "--results", str(packed)
        )
        assert code == 2 and out == "", command
        assert err == (
            f"error: Received --results {str(early)!r} and --results {str(packed)!r}: both hold run "
            "20260101T000000Z-000000 (and 5 more); expected each run in one of them (read twice, its "
            "rows would count twice).\n"
        )


def test_a_file_that_is_no_results_is_refused_by_every_reader(tmp_path: Path) -> None:
    _, early, _ = _split_history(tmp_path)
    csv = tmp_path / "rows.csv"
    csv.write_text("run_id,cell_id\n")
    for command in (
        ["compare"],
        ["report"],
        ["check"],
        ["predict", "--model", "cnn", "--strategy", "mirrored"],
    ):
        code, _, err = _call(*command, "--results", str(early), "--results", str(csv))
        assert code == 2, command
        assert err.startswith(
            f"error: Received --results={str(csv)!r}: not a results folder or a pack file written by "
            "`harness pack` (not a gzip file); expected"
        )


def test_report_reads_every_root_and_writes_into_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, early, late = _split_history(tmp_path)
    drawn: list[Any] = []
    monkeypatch.setattr(
        "harness.commands.report.write_report", lambda rows, out, *a: drawn.append((rows, out)) or []
    )

    assert _call("report", "--results", str(early), "--results", str(late), "--run", "last:12")[0] == 0
    rows, out = drawn.pop()
    assert out == early / "report" and rows["run_id"].nunique() == 12

    packed = tmp_path / "late.tar.gz"
    assert _call("pack", "--results", str(late), "--out", str(packed))[0] == 0
    assert _call("report", "--results", str(packed), "--results", str(early))[0] == 0
    rows, out = drawn.pop()
    assert out == tmp_path / "late-report" and set(rows["run_id"]) == {"20260112T000000Z-000011"}


def test_check_reads_each_root_a_pack_named_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, early, late = _split_history(tmp_path)
    packed = tmp_path / "late.tar.gz"
    bad = sorted((late / "cells").rglob("*.parquet"))[0]
    bad.write_bytes(bad.read_bytes()[:100])
    assert _call("pack", "--results", str(late), "--out", str(packed))[0] == 0
    monkeypatch.setattr(store, "DAMAGED", {})

    code, out, _ = _call("check", "--results", str(early), "--results", str(packed))

    lines = out.splitlines()
    inside = f"{packed}/{bad.relative_to(late)}"
    assert code == 1 and lines[0] == f"check {early}: 12 files read, 0 damaged"
    assert (
        lines[1].startswith(f"damaged: {inside} cannot be read")
        and lines[2] == f"check {packed}: 12 files read, 1 damaged"
    )


def test_predict_reads_a_pack_as_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = predict_folder(tmp_path)
    monkeypatch.setattr("harness.commands.predict.prediction_figure", lambda *a: [])
    argv = ("--model", "cnn", "--strategy", "mirrored", "--figures", str(tmp_path / "fig"))
    packed = tmp_path / "p.tar.gz"
    assert _call("pack", "--results", str(folder), "--out", str(packed))[0] == 0

    from_folder = _call("predict", "--results", str(folder), *argv)
    assert from_folder[0] == 0 and "6,000" in from_folder[1]
    assert _call("predict", "--results", str(packed), *argv) == from_folder
