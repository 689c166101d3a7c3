"""One pytest-benchmark test per cell of a sweep (ids = cell ids), measured by the harness itself.

The selected cells are measured together, once, by the harness's protocol (in turns, in groups
live at once, within the protocol's ``budget_min``, each cell in fresh worker processes, the run's
peak in its own processes); each test then
reports its cell: the raw timed windows of all its processes become the benchmark's rounds (seconds
per optimizer update), and its full result row is ``extra_info``, so ``pytest benchmarks/
--benchmark-json=F`` carries everything the parquet row does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.conftest import record_row
from harness.contract.columns import flatten
from harness.launch.cells.runner import RunResult
from harness.launch.sweep.budget import run_in_turns
from harness.launch.sweep.run_params import Output, Work
from harness.launch.system.platform import detect_platform
from harness.spec.cell import Cell
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import expand
from harness.spec.sweeps import get_sweep

SWEEP = get_sweep(os.environ.get("HARNESS_BENCH_SWEEP", "smoke"))
PLATFORM = detect_platform()
CELLS = expand(SWEEP, PLATFORM)


@pytest.fixture(scope="session")
def measured(request: pytest.FixtureRequest, results_dir: Path) -> RunResult:
    """One run of every selected, runnable cell (``-k`` selects cells)."""
    chosen = [
        item.callspec.params["cell"]
        for item in request.session.items
        if hasattr(item, "callspec") and "cell" in item.callspec.params
    ]
    runnable = [c for c in chosen if not unsupported_reason(c, PLATFORM)]
    return run_in_turns(Work(tuple(runnable), SWEEP.protocol, PLATFORM), Output(results_dir))


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_cell(benchmark: Any, cell: Cell, request: pytest.FixtureRequest) -> None:
    reason = unsupported_reason(cell, PLATFORM)
    if reason:
        pytest.skip(f"unsupported: {reason}")
    result: RunResult = request.getfixturevalue("measured")
    row = flatten(next(r for r in result.rows if r.cell.cell_id == cell.id))
    record_row(benchmark, row, result.windows)
    assert row["status"] == "ok", f"{row['status']}: {row['reason']}"
    assert row["examples_per_sec"] > 0
