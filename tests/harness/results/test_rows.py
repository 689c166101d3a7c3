"""Tests of harness.records (rows, baselines) and runner.with_efficiency. No TensorFlow."""

from __future__ import annotations

import json

import pytest

from harness.launch.runner import plan
from harness.results.rows import (
    cell_columns,
    fact_columns,
    find_baseline,
    not_measured_row,
    with_efficiency,
)
from harness.results.store import CELL_SCHEMA
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

PROTOCOL = Protocol(repeats=3, window_s=0.5, warmup_windows=1)


def row(status="ok", eps=None, **cell_kwargs):
    r = {**cell_columns(Cell(**cell_kwargs), PROTOCOL), "status": status}
    if eps is not None:
        r["examples_per_sec"] = eps
    return r


def test_cell_columns():
    cell = Cell(model="dense", replicas=2, batch=32, precision="mixed_bfloat16")
    cols = cell_columns(cell, PROTOCOL)
    assert set(cols) <= set(CELL_SCHEMA.names)
    assert cols["cell_id"] == cell.id
    assert cols["per_replica_batch"] == 32 and cols["global_batch"] == 64
    assert cols["flops_per_example"] == 409088
    assert cols["window_target_s"] == 0.5 and cols["repeats"] == 3 and cols["warmup_windows"] == 1
    assert cols["jit_compile"] is False
    assert "0.01" in cols["optimizer"] and cols["learning_rate"] == 0.01


def test_fact_columns():
    assert fact_columns(None) == {}
    facts = {"device_type": "CPU", "device_name": "cpu0", "host_cpu": "x86", "host_cores": 2,
             "intra_op_threads": 0, "inter_op_threads": 0, "tf_version": "2.21.0",
             "keras_version": "3.15.1", "python_version": "3.11.7", "cuda_version": None,
             "cudnn_version": None, "rocm_version": None, "nvidia_driver": None,
             "env": {"TF_B": "1", "TF_A": "2"}, "fingerprint": "abc"}
    cols = fact_columns(facts)
    assert set(cols) <= set(CELL_SCHEMA.names)
    assert cols["device_kind"] == "CPU" and cols["fingerprint"] == "abc"
    assert json.loads(cols["build_info"]) == {"cuda_version": None, "cudnn_version": None,
                                              "rocm_version": None, "nvidia_driver": None,
                                              "tensor_float_32": None}
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
    other_ops = row(eps=100.0, cross_device_ops="reduction_to_one_device", replicas=1, batch=64)
    other_precision = row(eps=100.0, precision="mixed_bfloat16", replicas=1, batch=64)
    other_spe = row(eps=100.0, steps_per_execution=5, replicas=1, batch=64)
    two_device = row(eps=150.0, replicas=2, batch=64)
    assert find_baseline(r2, [failed, unsupported, other_ops, other_precision, other_spe,
                              two_device]) is None
    assert find_baseline(r2, []) is None


def test_with_efficiency_two_replicas():
    base = row(eps=100.0, replicas=1, batch=64)
    r2 = row(eps=150.0, replicas=2, batch=64)
    out = with_efficiency(r2, [base])
    assert out["scaling_efficiency"] == 0.75
    assert out["baseline_cell_id"] == base["cell_id"]
    assert "scaling_efficiency" not in r2  # the input row is not modified


def test_with_efficiency_strong_scaling():
    base = row(eps=100.0, replicas=1, batch=128)
    r2 = row(eps=180.0, replicas=2, batch=128, scaling="strong")
    out = with_efficiency(r2, [row(eps=120.0, replicas=1, batch=64), base])
    assert out["scaling_efficiency"] == pytest.approx(0.9)
    assert out["baseline_cell_id"] == base["cell_id"]


def test_with_efficiency_one_device_is_its_own_baseline():
    base = row(eps=100.0, replicas=1, batch=64)
    out = with_efficiency(base, [])
    assert out["scaling_efficiency"] == 1.0 and out["baseline_cell_id"] == base["cell_id"]


def test_with_efficiency_without_baseline():
    r2 = row(eps=150.0, replicas=2, batch=64)
    out = with_efficiency(r2, [row(status="failed", replicas=1, batch=64)])
    assert out["baseline_cell_id"] == ""
    assert "scaling_efficiency" not in out


def test_with_efficiency_leaves_non_ok_rows_alone():
    failed = row(status="failed", replicas=2, batch=64)
    assert with_efficiency(failed, [row(eps=100.0, replicas=1, batch=64)]) == failed


def test_plan_marks_unsupported():
    cells = [Cell(), Cell(cross_device_ops="nccl"), Cell(replicas=3)]
    planned = plan(cells, Platform())
    assert [c for c, _ in planned] == cells
    assert planned[0][1] is None
    assert "NcclAllReduce" in planned[1][1]
    assert "3 replicas" in planned[2][1]
