"""``python -m harness ingest BENCH.json``: pytest-benchmark results into the results history.

``pytest benchmarks/ --benchmark-json=F`` writes, for every harness cell, the whole result row in
``extra_info`` and its timed windows in ``extra_info["harness_windows"]`` (see
``benchmarks/conftest.py``). Each such benchmark becomes a row of one new run (run id
``pytest-<UTC time of the JSON>-<hash of the file>``), so ``compare`` gates it like any run.
Benchmarks without a harness row (e.g. the fidelity check) are skipped and counted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from harness.contract.columns import unflatten
from harness.contract.records import CellRow, WindowRow
from harness.errors import HarnessError
from harness.results.store import CELL_SCHEMA, WINDOW_SCHEMA, RunFiles, check_rows
from harness.spec.axes import AXES

WINDOWS_KEY = "harness_windows"

REQUIRED = ("cell_id", "status", *(a.name for a in AXES if a.name in CELL_SCHEMA.names), "per_replica_batch")
"""Columns every harness row has (the cell it measured): a benchmark without them is no harness row
the analysis can read."""


@dataclass(frozen=True)
class Ingested:
    run_id: str
    rows: int
    skipped: list[str]
    path: Path | None


EXPECTED = "expected the file written by pytest --benchmark-json=FILE"


def _load(path: Path) -> dict[str, Any]:
    """The benchmark JSON, its shape checked (HarnessError naming what is wrong)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise HarnessError(f"cannot read {path} as JSON ({e}); {EXPECTED}") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise HarnessError(f'{path} has no "benchmarks" list; {EXPECTED}')
    for i, bench in enumerate(data["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("extra_info") or {}, dict):
            raise HarnessError(
                f"{path}: benchmark {i} is {str(bench)[:80]!r}; {EXPECTED} (each "
                "benchmark an object, its extra_info an object)"
            )
    try:
        _when(data)
    except ValueError:
        raise HarnessError(
            f"{path}: datetime is {data.get('datetime')!r}; {EXPECTED} (an ISO date and time)"
        ) from None
    return data


def _when(data: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(str(data.get("datetime", "1970-01-01T00:00:00")))


def run_id_of(data: dict[str, Any], raw: bytes) -> str:
    return f"pytest-{_when(data):%Y%m%dT%H%M%SZ}-{hashlib.sha256(raw).hexdigest()[:6]}"


def ingest(path: Path, results: Path) -> Ingested:
    """Append the harness rows of a pytest-benchmark JSON file to ``results`` as one run. Every row
    is checked against the results schema before the first is written."""
    raw = path.read_bytes() if path.is_file() else b""
    data = _load(path)
    run_id = run_id_of(data, raw)
    when = str(data.get("datetime", ""))
    files = RunFiles(results, when[:10] or "unknown-date", run_id)
    names, skipped = set(CELL_SCHEMA.names), []
    found: list[tuple[CellRow, list[dict[str, Any]]]] = []
    for bench in data["benchmarks"]:
        info = dict(bench.get("extra_info") or {})
        name = str(bench.get("fullname") or bench.get("name"))
        if "cell_id" not in info or "status" not in info:
            skipped.append(name)
            continue
        missing = [k for k in REQUIRED if info.get(k) is None]
        if missing:
            raise HarnessError(
                f"{path}: benchmark {name!r}'s harness row lacks {', '.join(missing)}; "
                f"{EXPECTED} by this suite's benchmarks (the whole row in extra_info)"
            )
        windows = info.pop(WINDOWS_KEY, [])
        if not isinstance(windows, list) or not all(isinstance(w, dict) for w in windows):
            raise HarnessError(
                f"{path}: benchmark {name!r} has {WINDOWS_KEY} {str(windows)[:80]!r}; "
                f"{EXPECTED} (a list of window objects)"
            )
        windows = [{**w, "run_id": run_id, "cell_id": info["cell_id"]} for w in windows]
        row = {k: v for k, v in info.items() if k in names}
        row.update(run_id=run_id, timestamp=row.get("timestamp") or when)
        try:
            check_rows([row], CELL_SCHEMA)
            check_rows(windows, WINDOW_SCHEMA)
            typed = unflatten(CellRow, row)  # a status outside Status: ValueError
        except (KeyError, ValueError, TypeError, pa.ArrowException) as e:
            raise HarnessError(
                f"{path}: benchmark {name!r}'s harness row does not fit the results "
                f"schema ({e}); {EXPECTED} by this suite's benchmarks"
            ) from None
        found.append((typed, windows))
    for seq, (typed, windows) in enumerate(found):
        files.write(seq, typed, cast(list[WindowRow], windows))
    return Ingested(run_id, len(found), skipped, files.folder("cells") if found else None)
