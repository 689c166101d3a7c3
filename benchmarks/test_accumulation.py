"""Accumulation on mirrored with 2 replicas: all-reduces per example fall by k; what it does to speed.

The CNN at 64 examples per replica per micro-batch, k = 1, 2, 4, 8 micro-batches per update, measured
side by side in one run (in turns, in groups live at once, within the protocol's 4-minute budget;
each cell in fresh worker processes, same protocol). The all-reduce counts are
counted from the traced update, not assumed; the test asserts they fall exactly by k.
"""

from __future__ import annotations

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
from harness.spec.protocol import Protocol

KS = (1, 2, 4, 8)
PROTOCOL = Protocol(repeats=7, window_s=1.0, warmup_windows=1, budget_min=4)
PLATFORM = detect_platform()
pytestmark = pytest.mark.skipif(PLATFORM.max_replicas < 2, reason="needs 2 devices")


def cell(k: int) -> Cell:
    return Cell(model="cnn", strategy="mirrored", replicas=2, batch=64, accum_steps=k, steps_per_execution=5)


@pytest.fixture(scope="module")
def measured(results_dir: Path) -> RunResult:
    return run_in_turns(Work(tuple(cell(k) for k in KS), PROTOCOL, PLATFORM), Output(results_dir))


@pytest.mark.parametrize("k", KS)
def test_accumulation(benchmark: Any, measured: RunResult, k: int) -> None:
    row = flatten(next(r for r in measured.rows if r.cell.cell_id == cell(k).id))
    record_row(benchmark, row, measured.windows)
    assert row["status"] == "ok", row["reason"]
    base = flatten(next(r for r in measured.rows if r.cell.cell_id == cell(1).id))
    assert row["allreduces_per_update"] == base["allreduces_per_update"] == 1
    assert row["allreduces_per_example"] == pytest.approx(base["allreduces_per_example"] / k)
    speedup = row["examples_per_sec"] / base["examples_per_sec"]
    benchmark.extra_info["throughput_vs_k1"] = speedup
    print(
        f"\nk={k}: effective batch {row['effective_batch']}, all-reduces/example "
        f"{row['allreduces_per_example']:.2e}, {row['examples_per_sec']:,.0f} examples/s "
        f"[{row['examples_per_sec_ci_low']:,.0f}, {row['examples_per_sec_ci_high']:,.0f}] "
        f"= {speedup:.3f} x k=1 (median of {PROTOCOL.repeats} windows of ~{PROTOCOL.window_s} s)"
    )
