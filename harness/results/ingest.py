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

from harness.contract.records import CellRow, WindowRow
from harness.errors import HarnessError
from harness.results.store import CELL_SCHEMA, RunFiles

WINDOWS_KEY = "harness_windows"


@dataclass(frozen=True)
class Ingested:
    run_id: str
    rows: int
    skipped: list[str]
    path: Path | None


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise HarnessError(f"cannot read {path} as JSON ({e}); expected the file written by "
                          "pytest --benchmark-json=FILE") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise HarnessError(f"{path} has no \"benchmarks\" list; expected the file written by "
                          "pytest --benchmark-json=FILE")
    return data


def run_id_of(data: dict[str, Any], raw: bytes) -> str:
    when = dt.datetime.fromisoformat(str(data.get("datetime", "1970-01-01T00:00:00")))
    return f"pytest-{when:%Y%m%dT%H%M%SZ}-{hashlib.sha256(raw).hexdigest()[:6]}"


def ingest(path: Path, results: Path) -> Ingested:
    """Append the harness rows of a pytest-benchmark JSON file to ``results`` as one run."""
    raw = path.read_bytes() if path.is_file() else b""
    data = _load(path)
    run_id = run_id_of(data, raw)
    when = str(data.get("datetime", ""))
    files = RunFiles(results, when[:10] or "unknown-date", run_id)
    names, skipped, seq = set(CELL_SCHEMA.names), [], 0
    for bench in data["benchmarks"]:
        info = dict(bench.get("extra_info") or {})
        if "cell_id" not in info or "status" not in info:
            skipped.append(str(bench.get("fullname") or bench.get("name")))
            continue
        # pytest-benchmark's JSON: columns as the benchmark recorded them, checked against the
        # schema when written
        windows = [cast(WindowRow, {**w, "run_id": run_id, "cell_id": info["cell_id"]})
                   for w in info.pop(WINDOWS_KEY, [])]
        row = cast(CellRow, {k: v for k, v in info.items() if k in names})
        row.update({"run_id": run_id, "timestamp": row.get("timestamp") or when})
        files.write(seq, row, windows)
        seq += 1
    return Ingested(run_id, seq, skipped, files.folder("cells") if seq else None)
