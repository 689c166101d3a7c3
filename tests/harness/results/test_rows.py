"""Tests of harness.results.rows: columns, baselines, aggregation over processes, ratios with CIs,
the run's peak and mfu. No TensorFlow."""

from __future__ import annotations

import json

import pytest

from harness.formulas import stats
from harness.launch.runner import plan
from harness.results.rows import (
    FIGURE_COLUMNS,
    Measurement,
    Peak,
    ProcessResult,
    aggregate,
    cell_columns,
    combine,
    fact_columns,
    find_baseline,
    measured_columns,
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


def row(status="ok", eps=None, processes=None, **cell_kwargs):
    r = {**cell_columns(Cell(**cell_kwargs), PROTOCOL), "status": status}
    if eps is not None:
        r["examples_per_sec"] = eps
        r["process_examples_per_sec"] = processes or [eps]
    return r


def test_cell_columns():
    cell = Cell(model="dense", replicas=2, batch=32, precision="mixed_bfloat16")
    cols = cell_columns(cell, PROTOCOL)
    assert set(cols) <= set(CELL_SCHEMA.names)
    assert cols["cell_id"] == cell.id
    assert cols["per_replica_batch"] == 32 and cols["global_batch"] == 64
    assert cols["flops_per_example"] == 409088
    assert cols["window_target_s"] == 0.5 and cols["repeats"] == 3 and cols["warmup_windows"] == 1
    assert "jit_compile" not in cols  # what ran: the worker reports it (measured_columns)
    assert "0.01" in cols["optimizer"] and cols["learning_rate"] == 0.01


def test_fact_columns():
    assert fact_columns(None) == {}
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
    cols = fact_columns(facts)
    assert set(cols) <= set(CELL_SCHEMA.names)
    assert cols["device_kind"] == "CPU" and cols["fingerprint"] == "abc"
    assert json.loads(cols["build_info"]) == {
        "cuda_version": None,
        "cudnn_version": None,
        "rocm_version": None,
        "nvidia_driver": None,
        "tensor_float_32": None,
    }
    assert cols["env"] == '{"TF_A": "2", "TF_B": "1"}'


def test_not_measured_row():
    cell = Cell(cross_device_ops="nccl", replicas=2)
    r = not_measured_row(cell, PROTOCOL, "unsupported", "no CPU kernel", None)
    assert set(r) <= set(CELL_SCHEMA.names)
    assert r["status"] == "unsupported" and r["reason"] == "no CPU kernel"
    assert r["cell_id"] == cell.id and "examples_per_sec" not in r


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
    assert r2["global_batch"] == 128 and r2["per_replica_batch"] == 64
    assert find_baseline(r2, [base64, base128]) is base128


def test_find_baseline_needs_ok_one_device_row_of_same_configuration():
    r2 = row(eps=150.0, replicas=2, batch=64)
    failed = row(status="failed", replicas=1, batch=64)
    unsupported = row(status="unsupported", replicas=1, batch=64)
    other_precision = row(eps=100.0, precision="mixed_bfloat16", replicas=1, batch=64)
    other_spe = row(eps=100.0, steps_per_execution=5, replicas=1, batch=64)
    two_device = row(eps=150.0, replicas=2, batch=64)
    assert find_baseline(r2, [failed, unsupported, other_precision, other_spe, two_device]) is None
    assert find_baseline(r2, []) is None


def test_efficiency_two_replicas_with_ci_over_processes():
    base = row(eps=100.0, processes=[95.0, 100.0, 105.0], replicas=1, batch=64)
    r2 = row(eps=150.0, processes=[140.0, 150.0, 160.0], replicas=2, batch=64)
    out = with_ratios(r2, [base, r2])
    assert out["scaling_efficiency"] == 0.75
    want = stats.ratio([140.0, 150.0, 160.0], [95.0, 100.0, 105.0]).scaled(0.5)
    assert out["scaling_efficiency_ci_low"] == pytest.approx(want.low)
    assert out["scaling_efficiency_ci_high"] == pytest.approx(want.high)
    assert out["scaling_efficiency_ci_low"] < 0.75 < out["scaling_efficiency_ci_high"]
    assert out["baseline_cell_id"] == base["cell_id"]
    assert "scaling_efficiency" not in r2  # the input row is not modified


def test_efficiency_baseline_of_a_cross_device_op_is_the_one_replica_cell():
    base = row(eps=100.0, strategy="mirrored", replicas=1, batch=64)
    assert base["cross_device_ops"] == "none"  # one replica: no reduce, one cell for every op
    r2 = row(eps=150.0, strategy="mirrored", cross_device_ops="hierarchical_copy", replicas=2, batch=64)
    assert with_ratios(r2, [base])["baseline_cell_id"] == base["cell_id"]


def test_efficiency_strong_scaling():
    base = row(eps=100.0, replicas=1, batch=128)
    r2 = row(eps=180.0, replicas=2, batch=128, scaling="strong")
    out = with_ratios(r2, [row(eps=120.0, replicas=1, batch=64), base])
    assert out["scaling_efficiency"] == pytest.approx(0.9)
    assert out["baseline_cell_id"] == base["cell_id"]


def test_one_device_is_its_own_baseline():
    base = row(eps=100.0, replicas=1, batch=64)
    out = with_ratios(base, [])
    assert out["scaling_efficiency"] == 1.0 and out["baseline_cell_id"] == base["cell_id"]


def test_efficiency_without_baseline():
    r2 = row(eps=150.0, replicas=2, batch=64)
    out = with_ratios(r2, [row(status="failed", replicas=1, batch=64)])
    assert out["baseline_cell_id"] == ""
    assert "scaling_efficiency" not in out


def test_ratios_leave_non_ok_rows_alone():
    failed = row(status="failed", replicas=2, batch=64)
    assert with_ratios(failed, [row(eps=100.0, replicas=1, batch=64)]) == failed


def test_cotenancy_ratio_with_ci():
    alone = row(eps=100.0, processes=[98.0, 100.0, 102.0], strategy="default")
    shared = row(eps=90.0, processes=[88.0, 90.0, 92.0], strategy="default", tenants=2)
    out = with_ratios(shared, [alone, shared])
    assert out["cotenancy_ratio"] == pytest.approx(0.9)
    assert out["cotenancy_ratio_ci_low"] < 0.9 < out["cotenancy_ratio_ci_high"] < 1.0


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


def test_a_process_figure_is_the_median_of_its_windows():
    cell = Cell(strategy="default", batch=10)
    cols = measured_columns(cell, _measurement())
    assert cols["examples_per_sec"] == 100.0
    assert cols["cv_within_process"] == pytest.approx(stats.cv([100.0, 100.0, 80.0]))
    assert cols["straggler_ratio"] == 1.0


def test_an_invalid_process_carries_no_figure_of_any_kind():
    cell = Cell(strategy="default", batch=10)
    cols = measured_columns(cell, _measurement(problems=("replica copies differ",)))
    assert cols["status"] == "invalid"
    assert all(cols.get(k) is None for k in FIGURE_COLUMNS)
    assert cols["tenant_examples_per_sec_min"] is None and cols["cv_within_process"] is None


def test_synchronous_multi_worker_has_no_straggler_figure():
    cell = Cell(strategy="multi_worker_mirrored", workers=2, batch=10)
    m = _measurement()
    m2 = Measurement(**{**m.__dict__, "worker_seconds": (m.window_seconds, (0.5, 0.5, 0.5))})
    assert measured_columns(cell, m2)["straggler_ratio"] is None


@pytest.mark.parametrize("jit", [False, True, None])
def test_the_row_takes_the_jit_compile_the_worker_reported(jit):
    cell = Cell(strategy="default", batch=10)
    m = Measurement(**{**_measurement().__dict__, "jit_compile": jit})
    assert measured_columns(cell, m)["jit_compile"] is jit
    assert measured_columns(cell, _measurement())["jit_compile"] is None  # nothing reported


def _with_jit(result, jit):
    if jit is not _MISSING:
        result.row["jit_compile"] = jit
    return result


_MISSING = object()


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
    procs = [_with_jit(_process(100.0 + k, k=k), jit) for k, jit in enumerate(reported)]
    out = aggregate(cell, PROTOCOL, procs)
    assert out["status"] == "ok" and out["jit_compile"] is expected
    failed = aggregate(cell, PROTOCOL, [*procs, _process(None, status="failed", k=len(procs))])
    assert failed["status"] == "failed" and failed["jit_compile"] is expected


def test_co_tenants_that_disagree_on_jit_compile_give_null():
    windows = [[{"start_s": 0.0, "window_s": 1.0, "examples": 100}] for _ in range(2)]
    rows = [{"status": "ok", "cv_within_process": 0.0, "jit_compile": jit} for jit in (True, False)]
    assert combine(rows, windows, 10)[0]["jit_compile"] is None
    same = [{**r, "jit_compile": True} for r in rows]
    assert combine(same, windows, 10)[0]["jit_compile"] is True


def test_the_cell_asks_for_no_xla_for_either_loop():
    assert Cell(loop="ctl").jit_compile is False and Cell(loop="fit").jit_compile is False


def _process(eps, status="ok", k=0, reason=""):
    return ProcessResult(
        {
            "status": status,
            "reason": reason,
            "examples_per_sec": eps,
            "cv_within_process": 0.01,
            "startup_s": 1.0 + k,
            "compile_s": 2.0,
        },
        [],
        k,
        wall_s=5.0,
        launch_s=3.0,
    )


def test_aggregate_over_processes():
    cell = Cell(strategy="default", batch=10)
    out = aggregate(cell, PROTOCOL, [_process(100.0, k=0), _process(90.0, k=1), _process(120.0, k=2)])
    est = stats.figure([100.0, 90.0, 120.0])
    assert out["examples_per_sec"] == 100.0 and out["processes"] == 3
    assert out["process_examples_per_sec"] == [100.0, 90.0, 120.0]
    assert out["examples_per_sec_ci_low"] == pytest.approx(est.low)
    assert out["examples_per_sec_ci_high"] == pytest.approx(est.high)
    assert out["cv_between_processes"] == pytest.approx(stats.cv([100.0, 90.0, 120.0]))
    assert out["cv_within_process"] == 0.01 and out["startup_s"] == 2.0 and out["wall_s"] == 15.0
    assert out["unstable"] is True  # cv 0.15 > 0.10
    assert out["optimizer_updates_per_sec"] == 10.0


def test_aggregate_gives_the_median_parts_and_the_verdict():
    cell = Cell(strategy="mirrored", replicas=2, batch=10)  # effective batch 20
    procs = [_process(eps, k=k) for k, eps in enumerate((100.0, 90.0, 120.0))]
    procs[0].row.update(parts_step_s=0.25, compute_s=0.1, allreduce_s=0.05, input_s=0.01, dispatch_s=0.001)
    out = aggregate(cell, PROTOCOL, procs)  # only the first pass measured the parts
    assert out["compute_s"] == 0.1 and out["allreduce_s"] == 0.05 and out["parts_step_s"] == 0.25
    assert out["step_s"] == pytest.approx(0.2)  # 20 examples / 100 examples/s
    # shares of the step timed with the parts, in the same process
    assert out["overlap"] == pytest.approx((0.161 - 0.25) / 0.25)
    assert out["bound"] == "compute" and "compute 40%" in out["bound_reason"]


def test_history_widens_an_ok_rows_ci_and_says_how_many_runs():
    row = aggregate(
        Cell(strategy="default"), PROTOCOL, [_process(100.0, k=0), _process(90.0, k=1), _process(120.0, k=2)]
    )
    alone = with_history(row, [100.0])
    assert alone["ci_history_runs"] == 0
    assert alone["examples_per_sec_ci_low"] == row["examples_per_sec_ci_low"]
    widened = with_history(row, [60.0, 150.0])
    est, _ = stats.figure_with_history([100.0, 90.0, 120.0], [60.0, 150.0])
    assert widened["ci_history_runs"] == 2 and widened["examples_per_sec"] == 100.0
    assert widened["examples_per_sec_ci_low"] == pytest.approx(est.low)
    assert widened["examples_per_sec_ci_high"] == pytest.approx(est.high)
    failed = {"status": "failed", "examples_per_sec": None}
    assert with_history(failed, [60.0, 150.0]) == failed


def test_aggregate_one_process_has_no_ci():
    out = aggregate(Cell(strategy="default"), PROTOCOL, [_process(100.0)])
    assert out["examples_per_sec"] == 100.0 and out["examples_per_sec_ci_low"] is None
    assert out["unstable"] is False


def test_a_failed_process_decides_the_row_without_figures():
    out = aggregate(
        Cell(strategy="default"),
        PROTOCOL,
        [_process(100.0), _process(None, "failed", 1, "killed by SIGKILL")],
    )
    assert out["status"] == "failed" and out["reason"] == "pass 2 of 2: killed by SIGKILL"
    assert all(out.get(k) is None for k in FIGURE_COLUMNS)


def test_adaptive_repeats_until_stable_or_the_cap():
    p = Protocol(processes=3, max_processes=4, unstable_cv=0.10)
    assert not needs_another_pass([_process(100.0), _process(101.0), _process(99.0)], p)
    assert needs_another_pass([_process(100.0), _process(80.0), _process(120.0)], p)
    assert not needs_another_pass([_process(100.0), _process(80.0), _process(120.0), _process(90.0)], p)
    assert not needs_another_pass([_process(100.0), _process(None, "invalid")], p)


def test_every_row_of_a_dtype_uses_one_peak_and_mfu_differ_by_throughput():
    peaks = {"float32": Peak("float32", stats.figure([1e11, 1.1e11, 0.9e11]))}
    facts = {"device_kind": "CPU", "host_cores": 2, "cores_per_worker": 2, "device_count": 1}
    a = with_peak(
        {**row(eps=1000.0, model="cnn", strategy="default"), **facts},
        peaks,
        Cell(model="cnn", strategy="default"),
    )
    b = with_peak(
        {**row(eps=2500.0, model="cnn", strategy="mirrored", replicas=2), **facts},
        peaks,
        Cell(model="cnn", strategy="mirrored", replicas=2),
    )
    assert a["peak_flops_per_sec"] == b["peak_flops_per_sec"] == 1e11
    assert a["peak_dtype"] == "float32" and a["peak_cores"] == 2
    assert b["mfu"] / a["mfu"] == pytest.approx(2.5)
    assert a["peak_flops_per_sec_ci_low"] < 1e11 < a["peak_flops_per_sec_ci_high"]


def test_peak_scales_to_the_cores_a_cell_had():
    peaks = {"float32": Peak("float32", stats.figure([1e11, 1e11]))}
    facts = {"device_kind": "CPU", "host_cores": 4, "cores_per_worker": 1, "device_count": 1}
    cell = Cell(strategy="multi_worker_mirrored", workers=2)
    out = with_peak({**row(eps=100.0, strategy="multi_worker_mirrored", workers=2), **facts}, peaks, cell)
    assert out["peak_cores"] == 2 and out["peak_flops_per_sec"] == 0.5e11
    gpu = {"device_kind": "GPU", "host_cores": 4, "device_count": 2}
    cell = Cell(strategy="mirrored", replicas=2)
    out = with_peak({**row(eps=100.0, strategy="mirrored", replicas=2), **gpu}, peaks, cell)
    assert out["peak_cores"] is None and out["peak_flops_per_sec"] == 2e11


def test_plan_marks_unsupported():
    cells = [Cell(), Cell(cross_device_ops="nccl", replicas=2), Cell(replicas=3)]
    planned = plan(cells, Platform())
    assert [c for c, _ in planned] == cells
    assert planned[0][1] is None
    assert "NcclAllReduce" in planned[1][1]
    assert "3 replicas" in planned[2][1]
