"""Earlier runs' figures for a row's CI (harness.results.history.earlier_figures); the history read
from several roots, folders and packs, a run given twice refused."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from harness.errors import EXIT_USAGE, HarnessError
from harness.results import history
from harness.results.history import (
    costs,
    earlier_figures,
    load,
    load_runs,
    load_table,
    open_roots,
    runs,
)
from harness.results.pack import write_pack
from tests.harness.results.test_pack import RUN_A, RUN_B, manifest, write_run


def _cells() -> pd.DataFrame:
    rows = [
        ("r1", "2026-01-01T00:00:00", "c", "fp", "ok", 100.0),
        ("r2", "2026-01-02T00:00:00", "c", "fp", "ok", 110.0),
        ("r2", "2026-01-02T00:05:00", "c", "fp", "ok", 112.0),  # a run with two rows: its last
        ("r3", "2026-01-03T00:00:00", "c", "other", "ok", 500.0),  # another machine
        ("r4", "2026-01-04T00:00:00", "c", "fp", "failed", None),
        ("r5", "2026-01-05T00:00:00", "d", "fp", "ok", 7.0),  # another cell
        ("r0", "2025-12-31T00:00:00", "c", "fp", "ok", 90.0),
    ]  # older, listed last
    return pd.DataFrame(
        rows, columns=["run_id", "timestamp", "cell_id", "fingerprint", "status", "examples_per_sec"]
    )


def test_one_figure_per_earlier_run_of_the_cell_on_the_fingerprint_oldest_first() -> None:
    assert earlier_figures(_cells(), "c", "fp") == [90.0, 100.0, 112.0]


def test_no_fingerprint_or_no_rows_gives_no_history() -> None:
    assert earlier_figures(_cells(), "c", None) == []
    assert earlier_figures(_cells().iloc[0:0], "c", "fp") == []


# ------------------------------------------------------------------------------------------------
# Several roots: folders and packs (harness.results.history.load, open_roots)
# ------------------------------------------------------------------------------------------------


def _two_folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two results folders, one run each (this machine's, and one brought from another)."""
    here, there = tmp_path / "here", tmp_path / "there"
    write_run(here, RUN_A)
    write_run(there, RUN_B, eps=2000.0)
    return here, there


def test_one_root_reads_as_before_given_as_a_str_a_path_or_a_list(tmp_path: Path) -> None:
    here, _ = _two_folders(tmp_path)
    for given in (str(here), here, [here], (str(here),)):
        cells, windows = load(given)
        assert set(cells["run_id"]) == {RUN_A} and len(cells) == 2 and len(windows) == 2


def test_several_roots_are_read_one_after_the_other_every_table(tmp_path: Path) -> None:
    here, there = _two_folders(tmp_path)
    cells, windows = load([here, there])
    assert list(cells["run_id"]) == [RUN_A, RUN_A, RUN_B, RUN_B]
    assert list(windows["run_id"]) == [RUN_A, RUN_A, RUN_B, RUN_B]
    assert list(runs(cells)["run_id"]) == [RUN_A, RUN_B]
    for table in ("ratios", "collectives"):
        assert list(load_table([here, there], table)["run_id"]) == [RUN_A, RUN_B]
    assert list(costs([here, there])["run_id"]) == [RUN_A, RUN_B]
    assert list(costs([there, here])["run_id"]) == [RUN_B, RUN_A]  # in the order given


def test_an_empty_root_beside_others_adds_nothing_and_alone_names_where_it_looked(tmp_path: Path) -> None:
    here, _ = _two_folders(tmp_path)
    (tmp_path / "empty").mkdir()
    assert len(load([here, tmp_path / "empty"])[0]) == 2
    with pytest.raises(HarnessError, match=r"no results under .*empty/cells: run `python -m harness run`"):
        load([tmp_path / "empty"])
    with pytest.raises(HarnessError, match=r"no results under .*nowhere/cells") as e:
        load([here, tmp_path / "nowhere"])  # a missing folder is a typo, not an empty history
    assert e.value.exit_code == EXIT_USAGE


def test_a_pack_reads_as_the_folder_it_was_packed_from(tmp_path: Path) -> None:
    here, there = _two_folders(tmp_path)
    pack = write_pack(there, manifest(RUN_B), tmp_path / "there.tar.gz").path
    from_folder, from_pack = load([here, there]), load([here, str(pack)])
    pd.testing.assert_frame_equal(from_folder[0], from_pack[0])
    pd.testing.assert_frame_equal(from_folder[1], from_pack[1])
    assert list(load_table([here, pack], "ratios")["run_id"]) == [RUN_A, RUN_B]
    (root,) = open_roots(pack)
    assert root.given == str(pack) and root.pack == manifest(RUN_B) and root.runs == {RUN_B}


def test_runs_lists_the_runs_of_every_table_given_by_their_first_row_oldest_first() -> None:
    collectives = pd.DataFrame(
        [("rc", "2026-01-02T12:00:00"), ("rc", "2026-01-02T11:00:00")], columns=["run_id", "timestamp"]
    )
    assert runs(_cells(), collectives).to_dict("list") == {
        "run_id": ["r0", "r1", "r2", "rc", "r3", "r4", "r5"],
        "start": [
            "2025-12-31T00:00:00",
            "2026-01-01T00:00:00",
            "2026-01-02T00:00:00",
            "2026-01-02T11:00:00",
            "2026-01-03T00:00:00",
            "2026-01-04T00:00:00",
            "2026-01-05T00:00:00",
        ],
    }
    assert list(runs(_cells().iloc[0:0], collectives)["run_id"]) == ["rc"]
    assert runs(_cells().iloc[0:0]).empty


def test_load_runs_reads_a_run_of_collectives_alone_and_refuses_a_folder_with_neither(tmp_path: Path) -> None:
    here, there = _two_folders(tmp_path)
    for table in ("cells", "windows", "ratios", "costs"):  # there: RUN_B's collectives rows alone
        shutil.rmtree(there / table)
    cells, collectives = load_runs([here, there])
    assert set(cells["run_id"]) == {RUN_A} and list(collectives["run_id"]) == [RUN_A, RUN_B]
    cells, collectives = load_runs(there)
    assert cells.empty and list(collectives["run_id"]) == [RUN_B]
    with pytest.raises(HarnessError, match=r"no results under .*there/cells"):
        load(there)
    shutil.rmtree(there / "collectives")
    with pytest.raises(HarnessError, match=r"no results under .*there/cells: run `python -m harness run`"):
        load_runs(there)


def _refused(roots: list[Path | str]) -> str:
    with pytest.raises(HarnessError) as e:
        load(roots)
    assert e.value.exit_code == EXIT_USAGE and "\n" not in str(e.value)
    return str(e.value)


def test_the_same_run_given_twice_is_refused_naming_it_and_both_roots(tmp_path: Path) -> None:
    here, there = _two_folders(tmp_path)
    pack = write_pack(here, manifest(RUN_A), tmp_path / "a.tar.gz").path
    write_run(there, RUN_A)  # a copy of the run in the other folder
    again = write_pack(there, manifest(RUN_A), tmp_path / "again.tar.gz").path
    for first, second in ((here, here), (here, pack), (pack, again), (here, there)):
        message = _refused([first, second])
        assert f"--results {str(first)!r} and --results {str(second)!r}: both hold run {RUN_A};" in message
        assert "expected each run in one of them" in message
    assert f"both hold run {RUN_A} (and 1 more)" in _refused([there, there])


def test_the_same_folder_twice_is_refused_before_any_row_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, _ = _two_folders(tmp_path)
    monkeypatch.setattr(history, "read", lambda root, table: pytest.fail("read before the refusal"))
    assert f"both hold run {RUN_A}" in _refused([here, here])


@pytest.mark.parametrize(
    "name, content, why",
    [
        ("rows.csv", b"run_id,cell_id\nx,y\n", "not a gzip file"),
        ("random.bin", bytes(range(256)) * 4, "not a gzip file"),
        ("other.tar.gz", None, "holds no pack.json"),
    ],
)
def test_a_file_that_is_not_a_pack_is_refused_in_one_line(
    tmp_path: Path, name: str, content: bytes | None, why: str
) -> None:
    here, _ = _two_folders(tmp_path)
    path = tmp_path / name
    if content is None:
        with tarfile.open(path, "w:gz") as tar:
            tar.add(here / "journal", arcname="journal")
    else:
        path.write_bytes(content)
    message = _refused([here, path])
    assert message.startswith(
        f"Received --results={str(path)!r}: not a results folder or a pack file written by `harness pack` ("
    )
    assert why in message and "expected a folder that `python -m harness run` wrote" in message
