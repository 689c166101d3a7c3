"""Ingesting pytest-benchmark JSON (harness.results.ingest): every row is checked, as the typed
record it will be stored as, before the first is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contract.columns import flatten
from harness.errors import HarnessError
from harness.results.ingest import ingest
from harness.results.measurement import cell_row
from harness.results.store import read_cells
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol


def _bench(tmp_path: Path, *statuses: str) -> Path:
    rows = [
        {
            **flatten(cell_row(Cell(model="dense", strategy="default", batch=32 * (i + 1)), Protocol())),
            "status": s,
        }
        for i, s in enumerate(statuses)
    ]
    data = {
        "datetime": "2026-11-26T10:00:00",
        "benchmarks": [
            {"name": f"cell{i}", "extra_info": {k: v for k, v in r.items() if v is not None}}
            for i, r in enumerate(rows)
        ],
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    return path


def test_rows_are_stored_as_their_typed_records(tmp_path: Path) -> None:
    done = ingest(_bench(tmp_path, "ok", "failed"), tmp_path / "results")
    cells = read_cells(tmp_path / "results")
    assert done.rows == 2 and sorted(cells["status"]) == ["failed", "ok"]
    assert set(cells["run_id"]) == {done.run_id} and set(cells["per_replica_batch"]) == {32, 64}


def test_a_status_outside_the_schema_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"benchmark 'cell1'.*does not fit the results schema.*'skipped'"):
        ingest(_bench(tmp_path, "ok", "skipped"), tmp_path / "results")
    assert not (tmp_path / "results").exists()  # not even the first, valid row
