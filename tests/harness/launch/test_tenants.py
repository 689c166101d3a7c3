"""Co-tenancy: combining tenants' rows (pure) and a real 2-tenant smoke cell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.results import rows as tenancy
from harness.spec.cell import Cell

ROOT = Path(__file__).resolve().parents[3]


def _tenant(rates: list[float], status: str = "ok", reason: str = "") -> tuple[dict, list[dict]]:
    row = {"status": status, "reason": reason,
           "examples_per_sec": sorted(rates)[len(rates) // 2] if rates else None,
           "mfu": 0.1, "compile_s": 1.0}
    return row, [{"cell_id": "c", "worker": 0, "repeat": k, "examples_per_sec": r}
                 for k, r in enumerate(rates)]


def test_aggregate_is_the_median_of_per_window_sums_and_shares_are_recorded() -> None:
    a, b = _tenant([100.0, 110, 90]), _tenant([50.0, 60, 40])
    row, windows = tenancy.combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row["examples_per_sec"] == 150.0  # sums 150, 170, 130
    assert row["tenant_examples_per_sec_min"] == 50.0 and row["tenant_examples_per_sec_max"] == 100.0
    assert row["tenant_share_min"] == pytest.approx(50 / 150)
    assert row["optimizer_updates_per_sec"] == 15.0 and row["mfu"] == pytest.approx(0.2)
    assert [w["worker"] for w in windows] == [0, 0, 0, 1, 1, 1]


def test_a_failed_tenant_fails_the_cell_and_is_named() -> None:
    a, b = _tenant([100.0, 110]), _tenant([], "invalid", "replica copies differ")
    row, _ = tenancy.combine([a[0], b[0]], [a[1], b[1]], effective_batch=10)
    assert row["status"] == "invalid" and row["reason"].startswith("tenant 1 of 2: replica")
    assert row["examples_per_sec"] is None


def test_tenants_apply_to_single_process_strategies_and_mark_the_id() -> None:
    assert Cell(strategy="default", tenants=2).id.split("/")[2] == "r1w1t2"
    assert Cell(strategy="default").id.split("/")[2] == "r1w1"
    assert Cell(strategy="multi_worker_mirrored", workers=2, tenants=2).tenants == 1


def test_two_tenant_smoke_cell_writes_per_tenant_throughput(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    from harness.results import history

    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--out", str(out), "--model", "dense",
         "--strategy", "default", "--tenants", "1,2", "--repeats", "3", "--window-s", "0.2",
         "--warmup-windows", "0"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells, windows = history.load(out)
    shared = cells[cells["tenants"] == 2].iloc[0]
    alone = cells[cells["tenants"] == 1].iloc[0]
    assert shared["status"] == "ok" and alone["status"] == "ok", shared["reason"]
    assert 0 < shared["tenant_examples_per_sec_min"] <= shared["tenant_examples_per_sec_max"]
    # the slowest tenant's median over the aggregate (the median of per-window sums, which can be
    # below the sum of the medians: so the share is near, not at most, 1/2)
    assert shared["tenant_share_min"] == pytest.approx(
        shared["tenant_examples_per_sec_min"] / shared["examples_per_sec"])
    assert 0 < shared["tenant_share_min"] < 1
    assert shared["cotenancy_ratio"] == pytest.approx(
        shared["examples_per_sec"] / alone["examples_per_sec"])
    mine = windows[windows["cell_id"] == shared["cell_id"]]
    assert sorted(mine["worker"].unique()) == [0, 1] and len(mine) == 6
    assert pd.isna(alone["cotenancy_ratio"]) and alone["tenant_share_min"] == 1.0
    assert " t2 " in proc.stdout  # the summary marks the co-tenant row
