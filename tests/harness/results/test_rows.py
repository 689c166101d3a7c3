"""Tests of harness.results.rows: the typed row, baselines, aggregation over processes, ratios with
CIs, the run's peak and mfu. No TensorFlow."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import fields, replace

import pytest

from harness.contract.columns import Estimate, flatten
from harness.contract.records import Breakdown, CellRow, Machine, Memory, Status
from harness.formulas import stats
from harness.launch.runner import plan
from harness.results.rows import (
    Measurement,
    Peak,
    ProcessResult,
    aggregate,
    axes,
    cell_row,
    combine,
    find_baseline,
    machine,
    measured_row,
    needs_another_pass,
    not_measured_row,
    with_history,
    with_peak,
    with_ratios,
)
from harness.results.store import CELL_SCHEMA
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

PROTOCOL = Protocol(repeats=3, window_s=0.5, warmup_windows=1)

SHARED_FIGURES = (
    "alone_examples_per_sec",
    "tenant_alone_examples_per_sec",
    "tenant_together_examples_per_sec",
    "interference_ratio",
)

FIGURE_COLUMNS = (
    "examples_per_sec",
    "examples_per_sec_ci_low",
    "examples_per_sec_ci_high",
    "process_examples_per_sec",
    "cv_between_processes",
    "cv_within_process",
    "mfu",
    "optimizer_updates_per_sec",
    "tenant_examples_per_sec_min",
    "tenant_examples_per_sec_max",
    "tenant_share_min",
    "straggler_ratio",
    "energy_j_per_example",
    "gpu_watts",
    "scaling_efficiency",
    "scaling_efficiency_ci_low",
    "scaling_efficiency_ci_high",
    "cotenancy_ratio",
    "cotenancy_ratio_ci_low",
    "cotenancy_ratio_ci_high",
    "peak_flops_per_sec",
    "peak_flops_per_sec_ci_low",
    "peak_flops_per_sec_ci_high",
    *(
        f"{name}{end}"
        for name in (*SHARED_FIGURES, "shared_ratio", "tenant_shared_ratio")
        for end in ("", "_ci_low", "_ci_high")
    ),
)
"""Every measured figure's column: an invalid or failed row carries none of them."""


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


def test_cell_row():
    cell = Cell(model="dense", replicas=2, batch=32, precision="mixed_bfloat16")
    r = cell_row(cell, PROTOCOL)
    assert set(flatten(r)) <= set(CELL_SCHEMA.names)
    assert r.cell == axes(cell) and r.cell.cell_id == cell.id
    assert r.cell.per_replica_batch == 32 and r.cell.global_batch == 64
    assert r.flops.flops_per_example == 409088
    assert r.timing.window_target_s == 0.5 and r.timing.repeats == 3 and r.timing.warmup_windows == 1
    assert r.ran.jit_compile is None  # what ran: the worker reports it (measured_row)
    assert "0.01" in r.cell.optimizer and r.cell.learning_rate == 0.01


def test_machine():
    assert machine(None) is None
    facts = {
        "device_type": "CPU",
        "device_name": "cpu0",
        "host_cpu": "x86",
        "host_cores": 2,
        "intra_op_threads": 0,
        "inter_op_threads": 0,
        "tf_version": "2.21.0",
        "keras_version": "3.15.1",
        "python_version": "3.11.7",
        "cuda_version": None,
        "cudnn_version": None,
        "rocm_version": None,
        "nvidia_driver": None,
        "env": {"TF_B": "1", "TF_A": "2"},
        "fingerprint": "abc",
    }
    m = machine(facts)
    assert m is not None
    assert {f.name for f in fields(Machine)} <= set(CELL_SCHEMA.names)
    assert m.device_kind == "CPU" and m.fingerprint == "abc"
    assert m.build_info is not None and json.loads(m.build_info) == {
        "cuda_version": None,
        "cudnn_version": None,
        "rocm_version": None,
        "nvidia_driver": None,
        "tensor_float_32": None,
    }
    assert m.env == '{"TF_A": "2", "TF_B": "1"}'


def test_not_measured_row():
    cell = Cell(cross_device_ops="nccl", replicas=2)
    r = not_measured_row(cell, PROTOCOL, Status.UNSUPPORTED, "no CPU kernel", None)
    assert set(flatten(r)) <= set(CELL_SCHEMA.names)
    assert r.status == "unsupported" and r.reason == "no CPU kernel"
    assert r.cell.cell_id == cell.id and r.examples_per_sec == Estimate()
    assert flatten(r)["examples_per_sec"] is None and r.machine is None


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


def _measurement(seconds=(1.0, 1.0, 1.25), problems=()):
    return Measurement(
        window_seconds=seconds,
        window_steps=10,
        startup_s=0.5,
        compile_s=1.0,
        final_loss=0.1,
        problems=problems,
        effective_cross_device_ops="none",
        allreduces_per_update=0.0,
        weights_digest="ab",
        device_kind="CPU",
        hosts=1,
        worker_seconds=(seconds,),
        worker_updates=(),
        updates_run=40,
        optimizer_iterations=40,
        joules=None,
    )


def _measured(cell: Cell, m: Measurement) -> CellRow:
    return measured_row(cell_row(cell, PROTOCOL), cell, m)


def test_a_process_figure_is_the_median_of_its_windows():
    cell = Cell(strategy="default", batch=10)
    r = _measured(cell, _measurement())
    assert r.examples_per_sec.value == 100.0
    assert r.spread.cv_within_process == pytest.approx(stats.cv([100.0, 100.0, 80.0]))
    assert r.updates.straggler_ratio == 1.0


def test_an_invalid_process_carries_no_figure_of_any_kind():
    cell = Cell(strategy="default", batch=10)
    r = _measured(cell, _measurement(problems=("replica copies differ",)))
    assert r.status == Status.INVALID
    cols = flatten(r)
    assert all(cols[k] is None for k in FIGURE_COLUMNS)
    assert r.tenancy.tenant_examples_per_sec_min is None and r.spread.cv_within_process is None


def test_synchronous_multi_worker_has_no_straggler_figure():
    cell = Cell(strategy="multi_worker_mirrored", workers=2, batch=10)
    m = _measurement()
    m2 = replace(m, worker_seconds=(m.window_seconds, (0.5, 0.5, 0.5)))
    assert _measured(cell, m2).updates.straggler_ratio is None


@pytest.mark.parametrize("jit", [False, True, None])
def test_the_row_takes_the_jit_compile_the_worker_reported(jit):
    cell = Cell(strategy="default", batch=10)
    m = replace(_measurement(), jit_compile=jit)
    assert _measured(cell, m).ran.jit_compile is jit
    assert _measured(cell, _measurement()).ran.jit_compile is None  # nothing reported


_MISSING = object()


def _with_jit(result: ProcessResult, jit) -> ProcessResult:
    if jit is _MISSING:
        return result
    return replace(result, row=replace(result.row, ran=replace(result.row.ran, jit_compile=jit)))


@pytest.mark.parametrize(
    "reported, expected",
    [
        ((True, True), True),
        ((False, False, False), False),
        ((False, True), None),  # the processes disagree: null, not a crash
        ((_MISSING, _MISSING), None),  # rows from an older suite's journal or events: no fact
        ((False, _MISSING), False),  # one process reported nothing
    ],
)
def test_the_cell_row_gives_the_jit_compile_its_processes_agree_on(reported, expected):
    cell = Cell(strategy="default", batch=10)
    procs = [_with_jit(_process(100.0 + k, k=k, cell=cell), jit) for k, jit in enumerate(reported)]
    out = aggregate(cell, PROTOCOL, procs)
    assert out.status == Status.OK and out.ran.jit_compile is expected
    failed = aggregate(cell, PROTOCOL, [*procs, _process(None, Status.FAILED, k=len(procs), cell=cell)])
    assert failed.status == Status.FAILED and failed.ran.jit_compile is expected


def test_co_tenants_that_disagree_on_jit_compile_give_null():
    windows = [[{"start_s": 0.0, "window_s": 1.0, "examples": 100}] for _ in range(2)]
    base = cell_row(Cell(strategy="default", tenants=2), PROTOCOL)
    rows = [
        replace(
            base,
            status=Status.OK,
            spread=replace(base.spread, cv_within_process=0.0),
            ran=replace(base.ran, jit_compile=jit),
        )
        for jit in (True, False)
    ]
    assert combine(rows, windows, 10)[0].ran.jit_compile is None
    same = [replace(r, ran=replace(r.ran, jit_compile=True)) for r in rows]
    assert combine(same, windows, 10)[0].ran.jit_compile is True


def test_the_cell_asks_for_no_xla_for_either_loop():
    assert Cell(loop="ctl").jit_compile is False and Cell(loop="fit").jit_compile is False


DEFAULT = Cell(strategy="default", batch=10)


def _process(eps, status=Status.OK, k=0, reason="", cell=DEFAULT, breakdown=None):
    base = cell_row(cell, PROTOCOL)
    return ProcessResult(
        replace(
            base,
            status=status,
            reason=reason,
            examples_per_sec=Estimate(eps),
            spread=replace(base.spread, cv_within_process=0.01),
            timing=replace(base.timing, startup_s=1.0 + k, compile_s=2.0),
            breakdown=breakdown or base.breakdown,
        ),
        [],
        k,
        wall_s=5.0,
        launch_s=3.0,
    )


def test_aggregate_over_processes():
    cell = Cell(strategy="default", batch=10)
    out = aggregate(
        cell,
        PROTOCOL,
        [_process(100.0, k=0, cell=cell), _process(90.0, k=1, cell=cell), _process(120.0, k=2, cell=cell)],
    )
    est = stats.figure([100.0, 90.0, 120.0])
    assert out.examples_per_sec.value == 100.0 and out.spread.processes == 3
    assert out.spread.process_examples_per_sec == [100.0, 90.0, 120.0]
    assert out.examples_per_sec.low == pytest.approx(est.low)
    assert out.examples_per_sec.high == pytest.approx(est.high)
    assert out.spread.cv_between_processes == pytest.approx(stats.cv([100.0, 90.0, 120.0]))
    assert out.spread.cv_within_process == 0.01
    assert out.timing.startup_s == 2.0 and out.timing.wall_s == 15.0
    assert out.spread.unstable is True  # cv 0.15 > 0.10
    assert out.updates.optimizer_updates_per_sec == 10.0


def test_aggregate_gives_the_median_parts_and_the_verdict():
    cell = Cell(strategy="mirrored", replicas=2, batch=10)  # effective batch 20
    parts = Breakdown(parts_step_s=0.25, compute_s=0.1, allreduce_s=0.05, input_s=0.01, dispatch_s=0.001)
    procs = [
        _process(eps, k=k, cell=cell, breakdown=parts if k == 0 else None)
        for k, eps in enumerate((100.0, 90.0, 120.0))
    ]
    out = aggregate(cell, PROTOCOL, procs).breakdown  # only the first pass measured the parts
    assert out.compute_s == 0.1 and out.allreduce_s == 0.05 and out.parts_step_s == 0.25
    assert out.step_s == pytest.approx(0.2)  # 20 examples / 100 examples/s
    # shares of the step timed with the parts, in the same process
    assert out.overlap == pytest.approx((0.161 - 0.25) / 0.25)
    assert out.bound == "compute" and out.bound_reason is not None and "compute 40%" in out.bound_reason


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


def test_aggregate_one_process_has_no_ci():
    cell = Cell(strategy="default")
    out = aggregate(cell, PROTOCOL, [_process(100.0, cell=cell)])
    assert out.examples_per_sec.value == 100.0 and out.examples_per_sec.low is None
    assert out.spread.unstable is False


def test_a_failed_process_decides_the_row_without_figures():
    cell = Cell(strategy="default")
    out = aggregate(
        cell,
        PROTOCOL,
        [_process(100.0, cell=cell), _process(None, Status.FAILED, 1, "killed by SIGKILL", cell=cell)],
    )
    assert out.status == Status.FAILED and out.reason == "pass 2 of 2: killed by SIGKILL"
    cols = flatten(out)
    assert all(cols[k] is None for k in FIGURE_COLUMNS)


def test_adaptive_repeats_until_stable_or_the_cap():
    p = Protocol(processes=3, max_processes=4, unstable_cv=0.10)
    assert not needs_another_pass([_process(100.0), _process(101.0), _process(99.0)], p)
    assert needs_another_pass([_process(100.0), _process(80.0), _process(120.0)], p)
    assert not needs_another_pass([_process(100.0), _process(80.0), _process(120.0), _process(90.0)], p)
    assert not needs_another_pass([_process(100.0), _process(None, Status.INVALID)], p)


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


def test_plan_marks_unsupported():
    cells = [Cell(), Cell(cross_device_ops="nccl", replicas=2), Cell(replicas=3)]
    planned = plan(cells, Platform())
    assert [c for c, _ in planned] == cells
    assert planned[0][1] is None
    assert "NcclAllReduce" in planned[1][1]
    assert "3 replicas" in planned[2][1]


def test_a_gpu_process_row_says_its_physical_gpus_logical_split_and_peak_memory():
    cell = Cell(strategy="mirrored", replicas=2, batch=10)
    cpu = _measured(cell, _measurement())
    assert cpu.memory == Memory() and cpu.ran.device_count == 1 and cpu.ran.logical_devices is True
    split = dataclasses.replace(
        _measurement(),
        device_kind="GPU",
        physical_gpus=1,
        gpu_memory_peak_mib=900.0,
        gpu_memory_limit_mib=36_000.0,
    )
    row = _measured(cell, split)
    assert row.ran.device_count == 1 and row.ran.logical_devices is True  # two logical GPUs of one
    assert row.memory == Memory(gpu_memory_peak_mib=900.0, gpu_memory_limit_mib=36_000.0)
    whole = _measured(cell, dataclasses.replace(split, physical_gpus=2, gpu_memory_limit_mib=None))
    assert whole.ran.device_count == 2 and whole.ran.logical_devices is False
    # the cell's row gives the median over its processes of each process's peak
    rows = [dataclasses.replace(whole, memory=Memory(gpu_memory_peak_mib=p)) for p in (800.0, 900.0, 1000.0)]
    results = [ProcessResult(r, [], i) for i, r in enumerate(rows)]
    assert aggregate(cell, PROTOCOL, results).memory.gpu_memory_peak_mib == 900.0
