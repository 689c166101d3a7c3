"""One pytest-benchmark test per cell of a sweep (ids = cell ids), measured by the harness itself.

Each cell runs in its own worker process by the harness's protocol; its raw timed windows become the
benchmark's rounds (seconds per optimizer update), and its full result row is ``extra_info``, so
``pytest benchmarks/ --benchmark-json=F`` carries everything the parquet row does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.conftest import record_row
from harness.launch.platform import detect_platform
from harness.launch.runner import run_sweep
from harness.spec.cell import Cell
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import expand
from harness.spec.sweeps import get_sweep

SWEEP = get_sweep(os.environ.get("HARNESS_BENCH_SWEEP", "smoke"))
PLATFORM = detect_platform()
CELLS = expand(SWEEP, PLATFORM)


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_cell(benchmark: Any, cell: Cell, results_dir: Path) -> None:
    reason = unsupported_reason(cell, PLATFORM)
    if reason:
        pytest.skip(f"unsupported: {reason}")
    result = run_sweep([cell], SWEEP.protocol, PLATFORM, results_dir)
    row = result.rows[0]
    record_row(benchmark, row, result.windows)
    assert row["status"] == "ok", f"{row['status']}: {row['reason']}"
    assert row["examples_per_sec"] > 0
