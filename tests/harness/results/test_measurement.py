"""Tests of harness.results.measurement: one process's row as the worker makes it (what the cell
is, where it ran, its figures from a Measurement). No TensorFlow."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import fields, replace

import pytest

from harness.contract.columns import flatten
from harness.contract.records import CellRow, Machine, Memory, Status
from harness.formulas import stats
from harness.results.aggregate import SHARED, ProcessResult, aggregate
from harness.results.measurement import Measurement, axes, cell_row, machine, measured_row
from harness.results.store import TABLES
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol

PROTOCOL = Protocol(repeats=3, window_s=0.5, warmup_windows=1)


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
        for name in (*SHARED, "shared_ratio", "tenant_shared_ratio")
        for end in ("", "_ci_low", "_ci_high")
    ),
)
"""Every measured figure's column: an invalid or failed row carries none of them."""


def test_cell_row():
    cell = Cell(model="dense", replicas=2, batch=32, precision="mixed_bfloat16")
    r = cell_row(cell, PROTOCOL)
    assert set(flatten(r)) <= set(TABLES["cells"].schema.names)
    assert r.cell == axes(cell) and r.cell.cell_id == cell.id
    assert r.cell.per_replica_batch == 32 and r.cell.global_batch == 64
    assert r.flops.flops_per_example == 409088
    assert r.timing.window_target_s == 0.5 and r.timing.repeats == 3 and r.timing.warmup_windows == 1
    assert r.ran.jit_compile is None  # what ran: the worker reports it (measured_row)
    assert r.cell.optimizer == "sgd" and r.cell.learning_rate == 0.01


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
    assert {f.name for f in fields(Machine)} <= set(TABLES["cells"].schema.names)
    assert m.device_kind == "CPU" and m.fingerprint == "abc"
    assert m.build_info is not None and json.loads(m.build_info) == {
        "cuda_version": None,
        "cudnn_version": None,
        "rocm_version": None,
        "nvidia_driver": None,
        "tensor_float_32": None,
    }
    assert m.env == '{"TF_A": "2", "TF_B": "1"}'


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


def test_the_parts_the_worker_timed_land_in_the_breakdown():
    cell = Cell(strategy="default", batch=10)
    m = replace(_measurement(), parts={"parts_step_s": 0.02, "compute_s": 0.015, "host_s": 0.001})
    b = _measured(cell, m).breakdown
    assert (b.parts_step_s, b.compute_s, b.host_s, b.allreduce_s) == (0.02, 0.015, 0.001, None)
    failed = _measured(cell, replace(_measurement(), parts_error="compute_s exceeds the step")).breakdown
    assert failed.bound_reason == "compute_s exceeds the step" and failed.compute_s is None


@pytest.mark.parametrize("jit", [False, True, None])
def test_the_row_takes_the_jit_compile_the_worker_reported(jit):
    cell = Cell(strategy="default", batch=10)
    m = replace(_measurement(), jit_compile=jit)
    assert _measured(cell, m).ran.jit_compile is jit
    assert _measured(cell, _measurement()).ran.jit_compile is None  # nothing reported


def test_the_cell_asks_for_no_xla_for_either_loop():
    assert Cell(loop="ctl").jit_compile is False and Cell(loop="fit").jit_compile is False


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


def test_the_seed_loss_is_kept_with_its_updates_and_is_the_median_over_processes():
    cell = Cell(strategy="default", batch=10, steps_per_execution=3)
    assert _measured(cell, _measurement()).checks.seed_updates is None  # not recorded: no count either
    row = _measured(cell, replace(_measurement(), seed_loss=2.25))
    assert row.checks.seed_loss == 2.25 and row.checks.seed_updates == 9  # same_updates(3)
    rows = [dataclasses.replace(row, checks=replace(row.checks, seed_loss=v)) for v in (2.0, 2.5, 2.25)]
    results = [ProcessResult(r, [], i) for i, r in enumerate(rows)]
    assert aggregate(cell, PROTOCOL, results).checks.seed_loss == 2.25
