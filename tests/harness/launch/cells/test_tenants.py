"""Co-tenancy: combining tenants' rows (pure) and a real 2-tenant smoke cell."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.contract.columns import Estimate
from harness.contract.records import CellRow, Energy, Status, WindowRow
from harness.results.aggregate import combine
from harness.results.measurement import cell_row
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol

ROOT = Path(__file__).resolve().parents[4]


def _tenant(
    starts: list[float],
    seconds: float = 1.0,
    examples: int = 100,
    status: str = "ok",
    reason: str = "",
    watts: float | None = None,
) -> tuple[CellRow, list[WindowRow]]:
    row = cell_row(Cell(strategy="default", tenants=2), Protocol())
    row = replace(
        row,
        status=Status(status),
        reason=reason,
        examples_per_sec=Estimate(examples / seconds),
        spread=replace(row.spread, cv_within_process=0.01),
        timing=replace(row.timing, compile_s=1.0),
        energy=Energy(gpu_watts=watts),
    )
    return row, [
        {
            "cell_id": "c",
            "worker": 0,
            "repeat": k,
            "start_s": t,
            "window_s": seconds,
            "examples": examples,
            "examples_per_sec": examples / seconds,
        }
        for k, t in enumerate(starts)
    ]


def test_tenants_that_never_timed_together_are_refused() -> None:
    # tenant a times 0..3, b times 3..5: no common span -> refused, never summed across time
    a, b = _tenant([0.0, 1.0, 2.0]), _tenant([3.0, 4.0])
    row, _ = combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row.status == "invalid" and "did not time together" in row.reason
    assert row.examples_per_sec.value is None


def test_a_window_partly_in_the_common_span_counts_in_proportion() -> None:
    a = _tenant([0.0, 1.0, 2.0])  # 100/s over 0..3
    b = _tenant([0.5, 2.5], seconds=2.0, examples=200)  # 100/s over 0.5..4.5; span 0.5..3
    row, _ = combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row.examples_per_sec.value == pytest.approx(200.0)


def test_aggregate_sums_tenants_over_their_common_span() -> None:
    a = _tenant([0.0, 1.0, 2.0, 3.0])  # 100/s, 0..4
    b = _tenant([1.0, 2.0, 3.0, 4.0], examples=50)  # 50/s, 1..5
    row, windows = combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row.examples_per_sec.value == 150.0  # span 1..4
    assert (
        row.tenancy.tenant_examples_per_sec_min == 50.0 and row.tenancy.tenant_examples_per_sec_max == 100.0
    )
    assert row.tenancy.tenant_share_min == pytest.approx(50 / 150) and row.updates.straggler_ratio == 2.0
    assert row.updates.optimizer_updates_per_sec == 15.0
    assert [w["worker"] for w in windows] == [0] * 4 + [1] * 4


def test_tenants_energy_is_shared_power_over_aggregate_throughput() -> None:
    a, b = _tenant([0.0, 1.0], watts=300.0), _tenant([0.0, 1.0], watts=310.0)
    row, _ = combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row.energy.gpu_watts == 305.0
    assert row.energy.energy_j_per_example == pytest.approx(305.0 / 200.0)  # not 2x: one GPU's energy


def test_a_failed_tenant_fails_the_cell_and_is_named() -> None:
    a, b = _tenant([0.0, 1.0]), _tenant([], status="invalid", reason="replica copies differ")
    row, _ = combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row.status == "invalid" and row.reason.startswith("tenant 1 of 2: replica")
    assert row.examples_per_sec.value is None and row.tenancy.tenant_examples_per_sec_min is None


def test_tenants_apply_to_single_process_strategies_and_mark_the_id() -> None:
    assert Cell(strategy="default", tenants=2).id.split("/")[2] == "r1w1t2"
    assert Cell(strategy="default").id.split("/")[2] == "r1w1"
    assert Cell(strategy="multi_worker_mirrored", workers=2, tenants=2).tenants == 1


@pytest.mark.process
def test_two_tenant_smoke_cell_writes_per_tenant_throughput(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    from harness.results import history

    out = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--results",
            str(out),
            "--model",
            "dense",
            "--strategy",
            "default",
            "--tenants",
            "1,2",
            "--blocks",
            "2",
            "--turn-s",
            "0.1",
            "--warmup-windows",
            "0",
            "--processes",
            "2",
            "--max-processes",
            "2",
            "--no-peak",
            "--no-breakdown",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells, windows = history.load(out)
    shared = cells[cells["tenants"] == 2].iloc[0]
    alone = cells[cells["tenants"] == 1].iloc[0]
    assert shared["status"] == "ok" and alone["status"] == "ok", shared["reason"]
    assert 0 < shared["tenant_examples_per_sec_min"] <= shared["tenant_examples_per_sec_max"]
    assert 0 < shared["tenant_share_min"] <= 0.5  # the slowest of two has at most half
    assert shared["processes"] == 2 and len(shared["process_examples_per_sec"]) == 2
    for r in (shared, alone):  # two processes: a (wide) CI around the median of their figures
        assert r["examples_per_sec_ci_low"] <= r["examples_per_sec"] <= r["examples_per_sec_ci_high"]
        assert r["cv_between_processes"] >= 0 and r["min_processes"] == 2
    # measured in turns: the ratios table's, the tenants' aggregate against one alone in adjacent turns
    ratios = pd.read_parquet(out / "ratios")
    (turns,) = ratios[ratios["relation"] == "cotenancy"].itertuples()
    assert turns.subject == shared["cell_id"]
    if turns.instances:  # the cell row carries the figure measured in turns
        assert shared["cotenancy_ratio"] == pytest.approx(turns.ratio)
    if turns.instances == 2:
        assert (
            shared["cotenancy_ratio_ci_low"] <= shared["cotenancy_ratio"] <= shared["cotenancy_ratio_ci_high"]
        )
    elif turns.instances == 1:  # every block of one instance disturbed (a busy 2-core machine): no CI
        assert math.isnan(shared["cotenancy_ratio_ci_low"]) and turns.disturbed_blocks >= 2, turns
    else:  # every block disturbed: no ratio in turns; the row keeps that of the separate processes
        assert math.isnan(turns.ratio) and turns.disturbed_blocks == 4, turns
        assert shared["cotenancy_ratio"] > 0 and shared["cotenancy_ratio_ci_low"] <= shared["cotenancy_ratio"]
    mine = windows[windows["cell_id"] == shared["cell_id"]]
    assert shared["repeats"] == 4  # 2 blocks x 2 turns
    assert sorted(mine["worker"].unique()) == [0, 1] and len(mine) == 16  # 2 instances x 2 tenants x 4
    assert sorted(mine["pass"].unique()) == [0, 1] and mine["start_s"].notna().all()
    assert pd.isna(alone["cotenancy_ratio"]) and alone["tenant_share_min"] == 1.0
    assert "2 processes at once, throughput summed" in proc.stdout  # the summary names the co-tenant row
