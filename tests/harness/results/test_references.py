"""Tests of harness.results.references: a cell's row against the run's rows (baselines, the cell
alone: efficiency and co-tenancy ratio with CIs), the run's peak and mfu, and earlier runs. No
TensorFlow."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.contract.columns import Estimate
from harness.contract.records import CellRow, Machine, Status
from harness.formulas import stats
from harness.results.aggregate import aggregate
from harness.results.measurement import cell_row
from harness.results.references import Peak, find_baseline, with_history, with_peak, with_ratios
from harness.spec.cell import Cell
from tests.harness.results.test_aggregate import _process
from tests.harness.results.test_measurement import PROTOCOL


def row(status=Status.OK, eps=None, processes=None, **cell_kwargs) -> CellRow:
    r = replace(cell_row(Cell(**cell_kwargs), PROTOCOL), status=status)
    if eps is not None:
        r = replace(
            r,
            examples_per_sec=Estimate(eps),
            spread=replace(r.spread, process_examples_per_sec=processes or [eps]),
        )
    return r


def on(r: CellRow, kind: str, host_cores: int, cores_per_worker=None, device_count=None) -> CellRow:
    """The row as run on a machine of ``kind`` with ``host_cores`` cores."""
    return replace(
        r,
        machine=Machine(device_kind=kind, host_cores=host_cores),
        ran=replace(r.ran, cores_per_worker=cores_per_worker, device_count=device_count),
    )


def test_find_baseline_weak_same_per_replica_batch():
    base64 = row(eps=100.0, replicas=1, batch=64)
    base128 = row(eps=90.0, replicas=1, batch=128)
    other_model = row(eps=50.0, model="dense", replicas=1, batch=64)
    r2 = row(eps=150.0, replicas=2, batch=64)  # weak: global 128, per replica 64
    assert find_baseline(r2, [other_model, base128, base64]) is base64


def test_find_baseline_strong_same_global_batch():
    base64 = row(eps=100.0, replicas=1, batch=64)
    base128 = row(eps=90.0, replicas=1, batch=128)
    r2 = row(eps=150.0, replicas=2, batch=128, scaling="strong")  # global 128, per replica 64
    assert r2.cell.global_batch == 128 and r2.cell.per_replica_batch == 64
    assert find_baseline(r2, [base64, base128]) is base128


def test_find_baseline_needs_ok_one_device_row_of_same_configuration():
    r2 = row(eps=150.0, replicas=2, batch=64)
    failed = row(status=Status.FAILED, replicas=1, batch=64)
    unsupported = row(status=Status.UNSUPPORTED, replicas=1, batch=64)
    other_precision = row(eps=100.0, precision="mixed_bfloat16", replicas=1, batch=64)
    other_spe = row(eps=100.0, steps_per_execution=5, replicas=1, batch=64)
    two_device = row(eps=150.0, replicas=2, batch=64)
    assert find_baseline(r2, [failed, unsupported, other_precision, other_spe, two_device]) is None
    assert find_baseline(r2, []) is None


def test_efficiency_two_replicas_with_ci_over_processes():
    base = row(eps=100.0, processes=[95.0, 100.0, 105.0], replicas=1, batch=64)
    r2 = row(eps=150.0, processes=[140.0, 150.0, 160.0], replicas=2, batch=64)
    out = with_ratios(r2, [base, r2])
    eff = out.efficiency.scaling_efficiency
    assert eff.value == 0.75
    want = stats.ratio([140.0, 150.0, 160.0], [95.0, 100.0, 105.0]).scaled(0.5)
    assert eff.low == pytest.approx(want.low)
    assert eff.high == pytest.approx(want.high)
    assert eff.low < 0.75 < eff.high
    assert out.efficiency.baseline_cell_id == base.cell.cell_id
    assert r2.efficiency.scaling_efficiency == Estimate()  # the input row is not modified


def test_efficiency_baseline_of_a_cross_device_op_is_the_one_replica_cell():
    base = row(eps=100.0, strategy="mirrored", replicas=1, batch=64)
    assert base.cell.cross_device_ops == "none"  # one replica: no reduce, one cell for every op
    r2 = row(eps=150.0, strategy="mirrored", cross_device_ops="hierarchical_copy", replicas=2, batch=64)
    assert with_ratios(r2, [base]).efficiency.baseline_cell_id == base.cell.cell_id


def test_efficiency_strong_scaling():
    base = row(eps=100.0, replicas=1, batch=128)
    r2 = row(eps=180.0, replicas=2, batch=128, scaling="strong")
    out = with_ratios(r2, [row(eps=120.0, replicas=1, batch=64), base])
    assert out.efficiency.scaling_efficiency.value == pytest.approx(0.9)
    assert out.efficiency.baseline_cell_id == base.cell.cell_id


def test_one_device_is_its_own_baseline():
    base = row(eps=100.0, replicas=1, batch=64)
    out = with_ratios(base, [])
    assert out.efficiency.scaling_efficiency.value == 1.0
    assert out.efficiency.baseline_cell_id == base.cell.cell_id


def test_efficiency_without_baseline():
    r2 = row(eps=150.0, replicas=2, batch=64)
    out = with_ratios(r2, [row(status=Status.FAILED, replicas=1, batch=64)])
    assert out.efficiency.baseline_cell_id == ""
    assert out.efficiency.scaling_efficiency == Estimate()


def test_ratios_leave_non_ok_rows_alone():
    failed = row(status=Status.FAILED, replicas=2, batch=64)
    assert with_ratios(failed, [row(eps=100.0, replicas=1, batch=64)]) == failed


def test_cotenancy_ratio_with_ci():
    alone = row(eps=100.0, processes=[98.0, 100.0, 102.0], strategy="default")
    shared = row(eps=90.0, processes=[88.0, 90.0, 92.0], strategy="default", tenants=2)
    out = with_ratios(shared, [alone, shared])
    ratio = out.tenancy.cotenancy_ratio
    assert ratio.value == pytest.approx(0.9)
    assert ratio.low < 0.9 < ratio.high < 1.0


def test_history_widens_an_ok_rows_ci_and_says_how_many_runs():
    cell = Cell(strategy="default")
    r = aggregate(
        cell,
        PROTOCOL,
        [_process(100.0, k=0, cell=cell), _process(90.0, k=1, cell=cell), _process(120.0, k=2, cell=cell)],
    )
    alone = with_history(r, [100.0])
    assert alone.spread.ci_history_runs == 0
    assert alone.examples_per_sec.low == r.examples_per_sec.low
    widened = with_history(r, [60.0, 150.0])
    est, _ = stats.figure_with_history([100.0, 90.0, 120.0], [60.0, 150.0])
    assert widened.spread.ci_history_runs == 2 and widened.examples_per_sec.value == 100.0
    assert widened.examples_per_sec.low == pytest.approx(est.low)
    assert widened.examples_per_sec.high == pytest.approx(est.high)
    failed = replace(cell_row(cell, PROTOCOL), status=Status.FAILED)
    assert with_history(failed, [60.0, 150.0]) == failed


def test_every_row_of_a_dtype_uses_one_peak_and_mfu_differ_by_throughput():
    peaks = {"float32": Peak("float32", stats.figure([1e11, 1.1e11, 0.9e11]))}
    a = with_peak(
        on(row(eps=1000.0, model="cnn", strategy="default"), "CPU", 2, cores_per_worker=2, device_count=1),
        peaks,
        Cell(model="cnn", strategy="default"),
    )
    b = with_peak(
        on(
            row(eps=2500.0, model="cnn", strategy="mirrored", replicas=2),
            "CPU",
            2,
            cores_per_worker=2,
            device_count=1,
        ),
        peaks,
        Cell(model="cnn", strategy="mirrored", replicas=2),
    )
    assert a.peak.peak_flops_per_sec.value == b.peak.peak_flops_per_sec.value == 1e11
    assert a.peak.peak_dtype == "float32" and a.peak.peak_cores == 2
    assert a.peak.mfu is not None and b.peak.mfu is not None
    assert b.peak.mfu / a.peak.mfu == pytest.approx(2.5)
    low, high = a.peak.peak_flops_per_sec.low, a.peak.peak_flops_per_sec.high
    assert low is not None and high is not None and low < 1e11 < high


def test_peak_scales_to_the_cores_a_cell_had():
    peaks = {"float32": Peak("float32", stats.figure([1e11, 1e11]))}
    cell = Cell(strategy="multi_worker_mirrored", workers=2)
    r = on(row(eps=100.0, strategy="multi_worker_mirrored", workers=2), "CPU", 4, 1, 1)
    out = with_peak(r, peaks, cell)
    assert out.peak.peak_cores == 2 and out.peak.peak_flops_per_sec.value == 0.5e11
    cell = Cell(strategy="mirrored", replicas=2)
    out = with_peak(
        on(row(eps=100.0, strategy="mirrored", replicas=2), "GPU", 4, device_count=2), peaks, cell
    )
    assert out.peak.peak_cores is None and out.peak.peak_flops_per_sec.value == 2e11
