"""Pack files (harness.results.pack): a run's files and journal packed with a manifest, read back
as a results folder; anything else refused with the reason."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from harness.contract.columns import unflatten
from harness.contract.records import CellRow, CostRow, RatioRow
from harness.results import journal, store
from harness.results.pack import (
    FORMAT,
    MANIFEST,
    VERSION,
    Manifest,
    NotAPack,
    open_pack,
    run_files,
    stored_runs,
    write_pack,
)
from harness.results.store import RunFiles

RUN_A = "20260101T000000Z-aaaaaa"
RUN_B = "20260102T000000Z-bbbbbb"


def write_run(
    root: Path,
    run_id: str,
    eps: float = 1000.0,
    cells: tuple[str, ...] = ("cnn/a", "cnn/b"),
    machine: str | None = None,
) -> None:
    """One run of ``cells`` under ``root`` (measured on ``machine``) with a row of every table a
    pack holds, and its journal."""
    day = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}"
    files = RunFiles(root, day, run_id)
    for i, cell in enumerate(cells):
        row = {
            "run_id": run_id,
            "timestamp": f"{day}T00:00:0{i}",
            "cell_id": cell,
            "model": "cnn",
            "status": "ok",
            "examples_per_sec": eps + 100 * i,
            "process_examples_per_sec": [eps + 100 * i],
            "fingerprint": "fp",
            "machine": machine,
        }
        files.write_windows(i, [{"run_id": run_id, "cell_id": cell, "worker": 0}])
        files.write_row(i, unflatten(CellRow, row))
    files.write_collective(0, {"run_id": run_id, "timestamp": f"{day}T00:00:00", "payload": "bytes"})
    files.write_ratios([unflatten(RatioRow, {"run_id": run_id, "relation": "strategy"})])
    files.write_cost(unflatten(CostRow, {"run_id": run_id, "wall_s": 60.0}))
    journal.Journal.create(journal.path_of(root, run_id), {"run_id": run_id}).close()


def manifest(*run_ids: str) -> Manifest:
    return Manifest(FORMAT, VERSION, run_ids, "2026-01-03T00:00:00Z", "0.1.0")


def test_a_pack_holds_its_runs_files_and_journal_and_reads_back_as_a_folder(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, RUN_A)
    write_run(root, RUN_B)
    (root / "logs" / "2026-01-01" / RUN_A).mkdir(parents=True)
    (root / "logs" / "2026-01-01" / RUN_A / "worker-0.log").write_text("not packed")

    packed = write_pack(root, manifest(RUN_A), tmp_path / "a.tar.gz")

    assert packed.files == len(run_files(root, RUN_A)) == 2 + 2 + 1 + 1 + 1 + 1  # cells, windows, ...
    assert packed.size == (tmp_path / "a.tar.gz").stat().st_size > 0
    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        names = tar.getnames()
        assert names[0] == MANIFEST and f"journal/{RUN_A}.jsonl" in names
        assert all(RUN_B not in n and not n.startswith("logs") for n in names)
        assert {m.uname for m in tar.getmembers()} == {""}  # no owner's name travels
    opened = open_pack(tmp_path / "a.tar.gz")
    assert opened.manifest == manifest(RUN_A)
    assert stored_runs(opened.folder) == {RUN_A}
    assert len(store.read_cells(opened.folder)) == 2 and len(store.read(opened.folder, "windows")) == 2
    for table in ("ratios", "costs", "collectives"):
        assert list(store.read(opened.folder, table)["run_id"]) == [RUN_A]
    assert journal.read(journal.path_of(opened.folder, RUN_A))[0]["kind"] == "plan"
    assert open_pack(tmp_path / "a.tar.gz") == opened  # extracted once per process


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _manifest_json(**change: object) -> bytes:
    raw = json.loads(manifest(RUN_A).to_json())
    return json.dumps({**raw, **change}).encode()


@pytest.mark.parametrize(
    "members, why",
    [
        ({"cells/x.parquet": b""}, "holds no pack.json"),
        ({MANIFEST: b"{not json"}, "is not JSON"),
        ({MANIFEST: _manifest_json(format="something else")}, "names format 'something else'"),
        ({MANIFEST: _manifest_json(format_version=2)}, "format version 2; this suite reads version 1"),
        ({MANIFEST: _manifest_json(run_ids="x")}, "no list of run ids"),
        ({MANIFEST: _manifest_json(), "etc/passwd": b"x"}, "outside a results folder's"),
        ({MANIFEST: _manifest_json()}, f"names runs {RUN_A} but it holds none"),
    ],
)
def test_a_tar_that_is_not_a_pack_says_why(tmp_path: Path, members: dict[str, bytes], why: str) -> None:
    with pytest.raises(NotAPack, match=why):
        open_pack(_tar(tmp_path / "x.tar.gz", members))


def test_a_file_that_is_no_tar_at_all_says_why(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    with pytest.raises(NotAPack, match="gzip"):
        open_pack(tmp_path / "rows.csv")


def test_a_member_that_would_land_outside_the_folder_is_refused(tmp_path: Path) -> None:
    bad = _tar(tmp_path / "x.tar.gz", {MANIFEST: _manifest_json(), "cells/../../escaped": b"x"})
    with pytest.raises(NotAPack):
        open_pack(bad)
    assert not (tmp_path / "escaped").exists()
