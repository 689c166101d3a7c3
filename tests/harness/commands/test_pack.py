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
from harness.results.store import RunFiles
from tests.harness.analysis.scale.test_links import cluster_rows, mwms_eps
from tests.harness.commands.test_check import _history
from tests.harness.commands.test_compare_links import _write as write_cells
from tests.harness.commands.test_predict import _folder as predict_folder
from tests.harness.commands.test_predict import write_collectives
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
    assert out == (
        f"wrote {RUN_A}.tar.gz: 2 runs, 4 cell rows, 2 collectives rows, 16 files, "
        f"{size_text(path.stat().st_size)}\n"
    )
    assert open_pack(path).manifest.run_ids == (RUN_A, RUN_B)


def test_pack_takes_run_references_and_an_out_file(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    write_run(root, RUN_B)
    out = tmp_path / "travel" / "latest.tar.gz"

    code, text, _ = _call("pack", "--results", str(root), "--runs", "latest", "--out", str(out))

    assert code == 0 and text.startswith(f"wrote {out}: 1 run, 2 cell rows, 1 collectives rows, 8 files, ")
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


RUN_C = "20260103T000000Z-cccccc"
"""A ``--sweep collectives`` run: rows in the collectives table alone."""


def _collectives_run(root: Path, machine: str | None = None) -> Path:
    write_collectives(RunFiles(root, "2026-01-03", RUN_C), RUN_C, machine)
    return root


def test_pack_packs_a_collectives_run_whose_rows_are_in_no_cells_table(tmp_path: Path) -> None:
    root = _collectives_run(tmp_path / "results")
    out = tmp_path / "c.tar.gz"

    code, text, err = _call("pack", "--results", str(root), "--runs", RUN_C, "--out", str(out))

    assert (code, err) == (0, "")
    assert text.startswith(f"wrote {out}: 1 run, 0 cell rows, 4 collectives rows, 4 files, ")
    opened = open_pack(out)
    assert opened.manifest.run_ids == (RUN_C,)
    assert sorted(p.name for p in (opened.folder / "collectives").rglob("*.parquet")) == [
        f"0000{i}.parquet" for i in range(4)
    ]


def test_pack_selects_runs_from_the_cells_and_the_collectives_tables_oldest_first(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    _collectives_run(root)

    assert _call("pack", "--results", str(root), "--out", str(tmp_path / "all.tar.gz"))[0] == 0
    assert open_pack(tmp_path / "all.tar.gz").manifest.run_ids == (RUN_A, RUN_C)
    code, text, _ = _call(
        "pack", "--results", str(root), "--runs", "latest", "--out", str(tmp_path / "l.tar.gz")
    )
    assert code == 0 and text.startswith(f"wrote {tmp_path / 'l.tar.gz'}: 1 run, 0 cell rows, 4 collectives")
    assert open_pack(tmp_path / "l.tar.gz").manifest.run_ids == (RUN_C,)


def test_pack_refuses_a_run_in_no_table_naming_it_and_the_runs_there(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    _collectives_run(root)
    bad = "20990101T000000Z-ffffff"

    code, out, err = _call("pack", "--results", str(root), "--runs", bad, "--out", str(tmp_path / "x.tar.gz"))

    assert (code, out) == (2, "") and not (tmp_path / "x.tar.gz").exists()
    assert err == (
        f"error: Received --runs={bad!r}: no run matches; expected a run id (or unique prefix), latest, "
        "previous, last:N, a date YYYY-MM-DD or a range YYYY-MM-DD..YYYY-MM-DD. Newest runs: "
        f"{RUN_A}, {RUN_C}.\n"
    )
    (tmp_path / "empty").mkdir()
    code, _, err = _call("pack", "--results", str(tmp_path / "empty"))
    assert code == 2 and err.startswith(f"error: no results under {tmp_path / 'empty' / 'cells'}:")


def test_pack_machine_names_a_collectives_run_by_the_machine_on_its_rows(tmp_path: Path) -> None:
    root = _collectives_run(tmp_path / "results", machine="node1")
    write_run(root, RUN_A, machine="box")

    code, _, err = _call("pack", "--results", str(root), "--out", str(tmp_path / "x.tar.gz"))
    assert code == 2 and "measured on 2 machines ('box'; 'node1')" in err
    code, _, err = _call(
        "pack", "--results", str(root), "--machine", "node9", "--out", str(tmp_path / "x.tar.gz")
    )
    assert code == 2 and err == (
        "error: Received --machine='node9': no run to pack measured it; expected one of: 'box'; 'node1'.\n"
    )
    assert (
        _call("pack", "--results", str(root), "--machine", "node1", "--out", str(tmp_path / "n.tar.gz"))[0]
        == 0
    )
    assert open_pack(tmp_path / "n.tar.gz").manifest.run_ids == (RUN_C,)


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


def test_predict_finds_the_all_reduce_times_in_a_collectives_run_s_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = predict_folder(tmp_path / "whole")
    cells = predict_folder(tmp_path / "cells", collectives=False)
    packed = tmp_path / "collectives.tar.gz"
    assert _call("pack", "--results", str(_collectives_run(tmp_path / "c")), "--out", str(packed))[0] == 0
    monkeypatch.setattr("harness.commands.predict.prediction_figure", lambda *a: [])
    argv = ("--model", "cnn", "--strategy", "mirrored", "--figures", str(tmp_path / "fig"))

    from_one_run = _call("predict", "--results", str(whole), *argv)
    assert from_one_run[0] == 0 and "measured (cnn gradients)" in from_one_run[1]
    assert _call("predict", "--results", str(cells), "--results", str(packed), *argv) == from_one_run


def test_compare_links_reads_a_pack_of_link_runs_as_their_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links = write_cells(tmp_path / "links", cluster_rows())
    packed = tmp_path / "links.tar.gz"
    assert _call("pack", "--results", str(links), "--out", str(packed))[0] == 0
    monkeypatch.setattr("harness.commands.compare_links.scaling_figure.draw", lambda *a: [])
    argv = ("compare-links", "--figures", str(tmp_path / "fig"))
    from_folder = _call(*argv, "--results", str(links))
    assert from_folder[0] == 0 and f"{mwms_eps(0.95):,.0f}"[:4] in from_folder[1]
    assert _call(*argv, "--results", str(packed)) == (
        from_folder[0],
        from_folder[1].replace(str(links), str(packed)),
        from_folder[2],
    )
