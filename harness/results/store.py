"""The only writer of ``results/``'s tables (the run journal is :mod:`harness.results.journal`'s):
the parquet schema (derived from the typed records of :mod:`harness.contract.records`), atomic
append, and reading back (a damaged file named and left out, the rest read).

Layout (append-only; one folder per table, date and run), and why a reader never sees half a file:
results/README.md, "Layout". Every file carries the full schema below, so
``pandas.read_parquet("results/cells")`` reads all runs at once; :func:`read` does the same with
the schema applied and files of an older layout read as today's (:mod:`harness.results.layouts`)."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from types import UnionType
from typing import Union, get_args, get_origin

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from harness.contract.columns import flatten, leaves
from harness.contract.records import CellRow, CollectiveRow, CostRow, NightlyRow, RatioRow, Status, WindowRow
from harness.results.layouts import LAYOUT, LAYOUT_KEY, upgrade


@dataclass(frozen=True)
class Column:
    """One documented column: arrow type, unit ("" for none) and meaning."""

    name: str
    type: pa.DataType
    unit: str
    doc: str


_ARROW: dict[object, pa.DataType] = {
    str: pa.string(),
    Status: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}
"""Python type of a record's field -> arrow type (``list[float]`` -> a list of float64)."""


def _arrow_type(hint: object) -> pa.DataType:
    """The arrow type of a field's type, with ``| None`` dropped (an enum of strings: a string)."""
    if get_origin(hint) in (Union, UnionType):
        hint = next(a for a in get_args(hint) if a is not type(None))
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return pa.string()
    if get_origin(hint) is list:
        return pa.list_(_arrow_type(get_args(hint)[0]))
    return _ARROW[hint]


AB_FOLDER = "ab"
"""``ab``'s tables live under ``<results>/ab``: its pairs are not runs of the history."""
NIGHTLY_FOLDER = "nightly"
"""``nightly``'s folder: its pair rows (the same tables as a run's) and its ``points`` table."""


@dataclass(frozen=True)
class Table:
    """One table of a results folder: where it lives under the root, its typed record, documented
    columns and parquet schema."""

    folder: str
    record: type
    columns: tuple[Column, ...]
    schema: pa.Schema


def _table_of(folder: str, record: type) -> Table:
    """``record``'s table: its columns (:func:`harness.contract.columns.leaves`, in order), their
    schema with today's layout in its metadata (:data:`harness.results.layouts.LAYOUT`)."""
    columns = tuple(Column(c.name, _arrow_type(c.hint), c.col.unit, c.col.doc) for c in leaves(record))
    schema = pa.schema(
        [pa.field(c.name, c.type) for c in columns], metadata={LAYOUT_KEY: str(LAYOUT).encode()}
    )
    return Table(folder, record, columns, schema)


TABLES = {
    "cells": _table_of("cells", CellRow),
    "windows": _table_of("windows", WindowRow),
    "collectives": _table_of("collectives", CollectiveRow),
    "ratios": _table_of("ratios", RatioRow),
    "costs": _table_of("costs", CostRow),
    "points": _table_of(f"{NIGHTLY_FOLDER}/points", NightlyRow),
}
"""Every table of a results folder (also under ``ab/`` and ``nightly/``), by its folder's name."""


def _table(rows: Sequence[Mapping[str, object]], schema: pa.Schema) -> pa.Table:
    unknown = {k for r in rows for k in r} - set(schema.names)
    if unknown:
        raise KeyError(f"columns not in the documented schema: {sorted(unknown)}")
    return pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows], schema=schema)


@contextmanager
def atomic(path: Path) -> Iterator[str]:
    """A temporary name in ``path``'s folder to write to; when the block ends, made readable by
    everyone (mkstemp makes 0600) and renamed to ``path``, or removed if it raised: a reader never
    sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` (:func:`atomic`), on disk before it gets its name."""
    with atomic(path) as tmp:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())


@dataclass(frozen=True)
class RunFiles:
    """Where one run's files go under a results root."""

    root: Path
    date: str
    run_id: str

    def folder(self, table: str) -> Path:
        return self.root / table / self.date / self.run_id

    def _write(self, table: str, name: str, rows: Sequence[Mapping[str, object]]) -> Path:
        """Write flat ``rows`` as file ``name`` of ``table`` (its schema: :data:`TABLES`)."""
        path = self.folder(table) / f"{name}.parquet"
        write_atomic(_table(rows, TABLES[table].schema), path)
        return path

    def write_windows(self, seq: int, windows: Sequence[WindowRow]) -> Path | None:
        """Append one process's window rows as windows file number ``seq`` (none: nothing)."""
        return self._write("windows", f"{seq:05d}", windows) if windows else None

    def write_collective(self, seq: int, row: CollectiveRow) -> Path:
        """Append one collectives row as collectives file number ``seq``."""
        return self._write("collectives", f"{seq:05d}", [row])

    def write_ratios(self, rows: Sequence[RatioRow]) -> Path | None:
        """The run's comparisons measured in turns, as one ratios file (none: nothing)."""
        return self._write("ratios", "00000", [flatten(r) for r in rows]) if rows else None

    def write_cost(self, row: CostRow) -> Path:
        """The run's cost row, as one costs file."""
        return self._write("costs", "00000", [flatten(row)])

    def write_points(self, rows: Sequence[NightlyRow]) -> Path | None:
        """A night's points (one per cell), as one file of the ``points`` table (none: nothing)."""
        return self._write("points", "00000", [flatten(r) for r in rows]) if rows else None

    def write_row(self, seq: int, row: CellRow) -> Path:
        """Append one cell's row as cells file number ``seq``."""
        return self._write("cells", f"{seq:05d}", [flatten(row)])


_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(), pa.string(): pd.StringDtype()}
"""Integers and booleans stay integers and booleans when some rows hold nulls."""


DAMAGED: dict[Path, str] = {}
"""Files this process could not read (path -> why), each named once on stderr as it was found."""

READ_ERRORS = (pa.ArrowException, OSError, ValueError)
"""What reading a truncated, corrupt or foreign parquet file raises."""


def damage_text(path: Path, error: str) -> str:
    """What a damaged results file is and what to do about it, in words."""
    root = path.parents[3] if len(path.parents) > 3 else path.parent  # <root>/<table>/<date>/<run>/<seq>
    run_id = path.parent.name
    todo = f"move it out of {root}"
    if (root / "journal" / f"{run_id}.jsonl").is_file():
        todo += f", then rebuild run {run_id}'s rows from its journal: python -m harness run --resume {run_id} --results {root}"
    return f"{path} cannot be read ({error}); its rows are left out. To repair: {todo}"


def error_text(error: Exception) -> str:
    """A read error's first line, without pyarrow's repetition of the path."""
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    return re.sub(r"^Could not open Parquet input source '[^']*': ", "", first)


def table_files(folder: Path) -> list[Path]:
    """The parquet files of one table folder (temporary files of writes under way left out)."""
    return sorted(p for p in folder.rglob("*.parquet") if not p.name.startswith("."))


def read_file(path: Path, schema: pa.Schema) -> pa.Table:
    """One results file with the schema applied (columns newer than the file read as null)."""
    return ds.dataset([str(path)], schema=schema, format="parquet").to_table()


def _layout(path: Path) -> int:
    """The layout a table file was written in (0: none recorded; a file that cannot be read: today's,
    for :func:`_read_files` to name)."""
    try:
        return int((pq.read_schema(path).metadata or {}).get(LAYOUT_KEY, b"0"))
    except READ_ERRORS:
        return LAYOUT


def _read_files(files: Sequence[Path], schema: pa.Schema) -> pd.DataFrame:
    """``files`` at once; when one cannot be read, file by file, every damaged one named
    (:func:`damage_text`) and left out, the others' rows kept."""
    try:
        table = ds.dataset([str(f) for f in files], schema=schema, format="parquet").to_table()
    except READ_ERRORS:
        tables = []
        for f in files:
            try:
                tables.append(read_file(f, schema))
            except READ_ERRORS as e:
                if f not in DAMAGED:
                    DAMAGED[f] = error_text(e)
                    print(f"warning: {damage_text(f, DAMAGED[f])}", file=sys.stderr, flush=True)
        table = pa.concat_tables(tables) if tables else schema.empty_table()
    return table.to_pandas(types_mapper=_NULLABLE.get)


def read(results: str | Path, table: str) -> pd.DataFrame:
    """Every row of ``table`` (its name in :data:`TABLES`) under ``results`` as a pandas DataFrame
    (documented schema), the files of layout 0 first, upgraded
    (:func:`harness.results.layouts.upgrade`)."""
    files, schema = table_files(Path(results) / TABLES[table].folder), TABLES[table].schema
    old = [f for f in files if _layout(f) == 0]
    frames = [upgrade(table, _read_files(old, schema))] if old else []
    if len(old) < len(files) or not files:
        frames.append(_read_files([f for f in files if f not in old], schema))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


read_cells = partial(read, table="cells")
"""For :mod:`harness.launch`: :func:`read` of ``cells``."""
read_nightly = partial(read, table="points")
"""For :mod:`harness.launch`: :func:`read` of the nightly ``points``."""
