"""Tests of harness.store: schema, atomic writes, reading back with pyarrow and pandas."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.contract.columns import flatten, unflatten, unflatten_all
from harness.contract.records import CellRow, NightlyRow, RatioRow, RunInfo, Status
from harness.results import store
from harness.results.cost import RunCost
from harness.results.measurement import cell_row
from harness.results.store import TABLES, RunFiles
from harness.spec.cell import Cell
from harness.spec.groups import Relation
from harness.spec.protocol import Protocol

REPO = Path(__file__).resolve().parents[3]


def _value(field: pa.Field, i: int):
    """A distinct, non-null value of the field's type for row ``i`` (a status: one of them)."""
    if field.name == "status":
        return list(Status)[i % len(Status)]
    if field.type == pa.int64():
        return 1000 * i + len(field.name)
    if field.type == pa.float64():
        return i + len(field.name) / 8  # exactly representable
    if field.type == pa.bool_():
        return i % 2 == 0
    if field.type == pa.list_(pa.float64()):
        return [float(i), i + 0.5]
    assert field.type == pa.string(), field
    return f"{field.name}-{i}"


def _cell_row(i: int) -> CellRow:
    """A row with every column set (each to a value distinct from the other rows')."""
    return unflatten(CellRow, {f.name: _value(f, i) for f in TABLES["cells"].schema})


def _window_rows(i: int, n: int = 3) -> list[dict]:
    return [
        {
            "run_id": f"run_id-{i}",
            "cell_id": f"cell_id-{i}",
            "worker": 0,
            "repeat": r,
            "window_steps": 50,
            "window_s": 0.25 * (r + 1),
            "examples": 3200,
            "examples_per_sec": 3200 / (0.25 * (r + 1)),
        }
        for r in range(n)
    ]


@pytest.fixture
def written(tmp_path):
    files = RunFiles(tmp_path, "2025-01-02", "20250102T030405Z-abcdef")
    rows = [_cell_row(i) for i in range(3)]
    paths = []
    for i, row in enumerate(rows):
        files.write_windows(i, _window_rows(i))
        paths.append(files.write_row(i, row))
    return tmp_path, files, rows, paths


def _assert_dtype(series: pd.Series, field: pa.Field) -> None:
    # read uses nullable dtypes, so columns stay typed when some rows hold nulls
    if field.type == pa.int64():
        assert series.dtype == pd.Int64Dtype(), field.name
    elif field.type == pa.float64():
        assert series.dtype == "float64", field.name
    elif field.type == pa.bool_():
        assert series.dtype == pd.BooleanDtype(), field.name
    elif field.type == pa.list_(pa.float64()):
        assert all(len(v) == 2 for v in series), field.name
    else:
        assert pd.api.types.is_string_dtype(series), field.name


def test_schema_names_unique_and_documented():
    assert len(set(TABLES["cells"].schema.names)) == len(TABLES["cells"].schema.names)
    assert len(set(TABLES["windows"].schema.names)) == len(TABLES["windows"].schema.names)
    for col in (*store.TABLES["cells"].columns, *store.TABLES["windows"].columns):
        assert col.doc.strip(), col.name


def test_write_paths_and_layout(written):
    root, files, _rows, paths = written
    assert files.folder("cells") == root / "cells" / "2025-01-02" / "20250102T030405Z-abcdef"
    assert paths == [files.folder("cells") / f"{i:05d}.parquet" for i in range(3)]
    assert sorted(p.name for p in files.folder("windows").iterdir()) == [
        "00000.parquet",
        "00001.parquet",
        "00002.parquet",
    ]


def test_read_cells_round_trip(written):
    root, _, rows, _ = written
    df = store.read_cells(root)
    assert list(df.columns) == TABLES["cells"].schema.names
    assert len(df) == 3
    df = df.sort_values("run_id").reset_index(drop=True)
    for field in TABLES["cells"].schema:
        _assert_dtype(df[field.name], field)
        got = [list(v) if field.type == pa.list_(pa.float64()) else v for v in df[field.name]]
        assert got == [flatten(r)[field.name] for r in rows], field.name


def test_cell_records_round_trip(written):
    root, _, rows, _ = written
    df = store.read_cells(root).sort_values("run_id").reset_index(drop=True)
    records = unflatten_all(CellRow, df.to_dict("records"))
    assert records == rows
    assert all(isinstance(r.status, Status) for r in records)
    assert unflatten_all(CellRow, df.iloc[1:2].to_dict("records")) == rows[1:2]


def test_read_windows_round_trip(written):
    root, _, _, _ = written
    df = store.read(root, "windows")
    assert list(df.columns) == TABLES["windows"].schema.names
    assert len(df) == 9
    for field in TABLES["windows"].schema:
        _assert_dtype(df[field.name], field)
    first = df[df["cell_id"] == "cell_id-0"].sort_values("repeat")
    assert first["repeat"].tolist() == [0, 1, 2]
    assert first["window_s"].tolist() == [0.25, 0.5, 0.75]
    assert first["examples_per_sec"].tolist() == [12800.0, 6400.0, 3200 / 0.75]


def test_pandas_reads_the_folder_directly(written):
    root, _, rows, _ = written
    df = pd.read_parquet(root / "cells")
    assert set(TABLES["cells"].schema.names) <= set(df.columns)
    assert len(df) == 3
    assert sorted(df["cell_id"]) == sorted(r.cell.cell_id for r in rows)
    assert sorted(df["examples_per_sec"]) == sorted(r.examples_per_sec.value for r in rows)
    assert len(pd.read_parquet(root / "windows")) == 9


def test_unset_figures_read_as_null(tmp_path):
    files = RunFiles(tmp_path, "2025-01-02", "run")
    cell = Cell(strategy="default")
    row = replace(cell_row(cell, Protocol()), status=Status.UNSUPPORTED, reason="why")
    files.write_row(0, row)
    df = store.read_cells(tmp_path)
    assert list(df.columns) == TABLES["cells"].schema.names
    assert df.loc[0, "cell_id"] == cell.id and df.loc[0, "reason"] == "why"
    assert df.loc[0, "status"] == "unsupported" and df.loc[0, "model"] == "cnn"
    assert math.isnan(df.loc[0, "examples_per_sec"])
    assert pd.isna(df.loc[0, "fingerprint"])  # no machine
    assert unflatten_all(CellRow, df.to_dict("records")) == [row]
    # a row without windows writes no windows file
    assert not files.folder("windows").exists()
    assert len(store.read(tmp_path, "windows")) == 0


def test_missing_columns_read_as_null(tmp_path):
    # a file written before most columns existed holds only these
    old = pa.Table.from_pylist([{"cell_id": "c", "status": "unsupported", "reason": "why"}])
    store.write_atomic(old, RunFiles(tmp_path, "2025-01-02", "run").folder("cells") / "00000.parquet")
    df = store.read_cells(tmp_path)
    assert list(df.columns) == TABLES["cells"].schema.names
    assert df.loc[0, "cell_id"] == "c" and df.loc[0, "reason"] == "why"
    assert math.isnan(df.loc[0, "examples_per_sec"])
    assert pd.isna(df.loc[0, "learning_rate"]) and df.loc[0, "xla"] == "off"  # an axis: its default
    (record,) = unflatten_all(CellRow, df.to_dict("records"))
    assert record.cell.cell_id == "c" and record.status == Status.UNSUPPORTED and record.reason == "why"
    assert record.examples_per_sec.value is None and record.machine is None


def test_empty_results_read_as_empty_frames(tmp_path):
    cells = store.read_cells(tmp_path)
    windows = store.read(tmp_path, "windows")
    assert len(cells) == 0 and list(cells.columns) == TABLES["cells"].schema.names
    assert len(windows) == 0 and list(windows.columns) == TABLES["windows"].schema.names


def test_unknown_columns_raise_key_error(tmp_path):
    files = RunFiles(tmp_path, "2025-01-02", "run")
    with pytest.raises(KeyError, match="not_a_column"):
        unflatten(CellRow, {**flatten(_cell_row(0)), "not_a_column": 1})
    with pytest.raises(KeyError, match="not_a_column"):
        store._table([{**flatten(_cell_row(0)), "not_a_column": 1}], TABLES["cells"].schema)
    with pytest.raises(KeyError, match="bogus"):
        files.write_windows(1, [{**_window_rows(1)[0], "bogus": 2}])
    assert len(store.read_cells(tmp_path)) == 0


def test_hidden_temp_files_are_ignored(written):
    root, files, _, _ = written
    folder = files.folder("cells")
    (folder / ".tmpabc123.tmp").write_bytes(b"half a parquet file")
    (folder / ".00099.parquet").write_bytes(b"PAR1 garbage")
    df = store.read_cells(root)
    assert len(df) == 3
    assert len(pd.read_parquet(root / "cells")) == 3


def test_write_atomic_leaves_no_temp_file(tmp_path):
    table = pa.Table.from_pylist([{"a": 1}, {"a": 2}])
    target = tmp_path / "deep" / "folder" / "t.parquet"
    store.write_atomic(table, target)
    assert [p.name for p in target.parent.iterdir()] == ["t.parquet"]
    assert pq.read_table(target).column("a").to_pylist() == [1, 2]
    # overwriting in place also leaves only the target
    store.write_atomic(pa.Table.from_pylist([{"a": 3}]), target)
    assert [p.name for p in target.parent.iterdir()] == ["t.parquet"]
    assert pq.read_table(target).column("a").to_pylist() == [3]


def test_write_atomic_cleans_up_on_failure(tmp_path, monkeypatch):
    def boom(table, where):
        Path(where).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(store.pq, "write_table", boom)
    target = tmp_path / "t.parquet"
    with pytest.raises(OSError, match="disk full"):
        store.write_atomic(pa.Table.from_pylist([{"a": 1}]), target)
    assert list(tmp_path.iterdir()) == []


def test_read_cells_keeps_types_with_null_rows(tmp_path):
    files = RunFiles(tmp_path, "2025-01-02", "run")
    a, b = (cell_row(Cell(strategy="default", batch=n), Protocol()) for n in (32, 64))
    a = replace(
        a,
        status=Status.OK,
        timing=replace(a.timing, window_steps=40),
        ran=replace(a.ran, jit_compile=False),
    )
    b = replace(b, status=Status.UNSUPPORTED, reason="why")
    files.write_row(0, a)
    files.write_row(1, b)
    cells = store.read_cells(tmp_path).set_index("cell_id")
    assert cells.window_steps.dtype == pd.Int64Dtype() and cells.loc[a.cell.cell_id, "window_steps"] == 40
    assert pd.isna(cells.loc[b.cell.cell_id, "window_steps"])
    assert cells.jit_compile.dtype == pd.BooleanDtype()


def _readme_columns(table: str) -> list[tuple[str, str]]:
    """(column, arrow type) of one table of results/README.md, in order."""
    text = (REPO / "results" / "README.md").read_text(encoding="utf-8")
    section = text.split(f"### `{table}` table\n")[1].split("\n#")[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| `")]
    return [(cells[1].strip("` "), cells[2].strip()) for cells in rows]


def test_a_row_of_each_table_is_written_with_the_documented_columns(tmp_path):
    """A row of each table, built as its record (a group such as RunInfo inlined), written and read
    back: its file's columns and arrow types are the ones results/README.md documents, in order."""
    files = RunFiles(tmp_path, "2025-01-02", "run")

    def full(record: type, schema: pa.Schema):
        values = {f.name: _value(f, 1) for f in schema}
        return unflatten(record, {**values, **({"relation": Relation.AB} if "relation" in values else {})})

    window = {f.name: _value(f, 1) for f in TABLES["windows"].schema}
    collective = {f.name: _value(f, 1) for f in store.TABLES["collectives"].schema}
    written = {
        "cells": files.write_row(0, full(CellRow, TABLES["cells"].schema)),
        "windows": files.write_windows(0, [window]),
        "collectives": files.write_collective(0, collective),
        "ratios": files.write_ratios([full(RatioRow, store.TABLES["ratios"].schema)]),
        "costs": files.write_cost(RunCost().row(RunInfo(run_id="run"), None, 1.0, 60.0, False)),
        "nightly/points": files.write_points([full(NightlyRow, store.TABLES["points"].schema)]),
    }
    for table, path in written.items():
        assert path is not None
        schema = pq.read_schema(path)
        # parquet names a list's values "element" where arrow says "item"
        found = [(f.name, str(f.type).replace("<element:", "<item:")) for f in schema]
        assert found == _readme_columns(table), table
