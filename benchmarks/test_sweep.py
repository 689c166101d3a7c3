"""One pytest-benchmark test per cell of a sweep (ids = cell ids), measured by the harness itself.

Each cell runs in its own worker process by the harness's protocol; its raw timed windows become the
benchmark's rounds (seconds per optimizer step), and its full result row is ``extra_info``, so
``pytest benchmarks/ --benchmark-json=F`` carries everything the parquet row does.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

from harness.launch import detect_platform
from harness.runner import run_sweep
from harness.spec import Cell, expand, unsupported_reason
from harness.sweeps import get_sweep

SWEEP = get_sweep(os.environ.get("HARNESS_BENCH_SWEEP", "smoke"))
PLATFORM = detect_platform()
CELLS = expand(SWEEP, PLATFORM)


def record_windows(benchmark: Any, seconds_per_step: list[float]) -> None:
    """Give pytest-benchmark the harness's own window timings as its rounds.

    pytest-benchmark has no public call for timings measured elsewhere; ``_make_stats`` is the call
    its own ``pedantic`` mode uses to open a stats record.
    """
    stats = benchmark._make_stats(1)
    benchmark._mode = "harness windows"
    for s in seconds_per_step:
        stats.update(s)


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_cell(benchmark: Any, cell: Cell, results_dir: Path) -> None:
    reason = unsupported_reason(cell, PLATFORM)
    if reason:
        pytest.skip(f"unsupported: {reason}")
    result = run_sweep([cell], SWEEP.protocol, PLATFORM, results_dir)
    row = result.rows[0]
    benchmark.extra_info.update(_jsonable(row))
    assert row["status"] == "ok", f"{row['status']}: {row['reason']}"
    record_windows(benchmark, [w["window_s"] / w["window_steps"] for w in result.windows])
    assert row["examples_per_sec"] > 0
