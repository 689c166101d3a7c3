"""One notion of a machine: a name, its facts and its measured peak."""

from __future__ import annotations

import dataclasses

import pytest

from harness.analysis.comparisons import machines
from harness.contract.columns import Estimate
from harness.contract.machine import MachineFacts
from harness.contract.records import Axes, CellRow, Machine, RunInfo, Utilization
from harness.errors import HarnessError

ZEN5 = MachineFacts("AMD EPYC", "26", "2", "1", "avx2 avx512f", 2, 0.0, "L2 1024 KiB", 24)
OLD = MachineFacts(cpu_model="AMD EPYC", cores=2, partial=True)
"""A run's facts from before the suite recorded them, as :mod:`harness.results.layouts` reads them."""
ZEN2 = dataclasses.replace(ZEN5, cpu_family="23", cpu_model_number="49", cpu_stepping="0", cpu_flags="avx2")


def row(run_id: str, peak: float, facts: MachineFacts | None = None, name: str | None = None) -> CellRow:
    run = RunInfo(
        run_id=run_id,
        timestamp=f"2026-11-2{run_id[-1]}T00:00:00+00:00",
        machine=name,
        machine_facts=(facts or OLD).to_json(),
    )
    cell = Axes(
        model="cnn",
        data="synthetic",
        strategy="default",
        cross_device_ops="none",
        communication="none",
        replicas=1,
        workers=1,
        ps=0,
        tenants=1,
        per_replica_batch=64,
        global_batch=64,
        accum_steps=1,
        effective_batch=64,
        loop="ctl",
        steps_per_execution=10,
        precision="float32",
        xla="off",
        scaling="weak",
        tenant_framework="none",
        optimizer="sgd",
        learning_rate=0.01,
        cell_id=f"cnn/{run_id}",
    )
    return CellRow(
        run=run,
        cell=cell,
        peak=Utilization(
            peak_flops_per_sec=Estimate(peak, peak * 0.85, peak * 1.15), peak_dtype="float32", peak_cores=2
        ),
        machine=Machine(device_kind="CPU", device_name="AMD EPYC", host_cpu="AMD EPYC", host_cores=2),
    )


def test_old_runs_of_one_name_are_told_apart_by_their_peaks() -> None:
    found = machines.identify([row("r1", 193e9), row("r2", 458e9), row("r3", 200e9)])
    assert len(found) == 2
    slow, fast = sorted(found, key=lambda m: m.runs[0].peak.value or 0)
    assert slow.run_ids == ("r1", "r3") and fast.run_ids == ("r2",)
    assert "peaks' 95% CIs do not overlap" in slow.why and slow.name.endswith("peak 193 GFLOP/s")
    assert slow.name.startswith("AMD EPYC 2 cores ")


def test_one_name_for_two_sets_of_facts_is_refused_naming_the_fix() -> None:
    with pytest.raises(HarnessError) as e:
        machines.identify([row("r1", 400e9, ZEN5, "lab"), row("r2", 400e9, ZEN2, "lab")])
    assert e.value.exit_code == 2
    assert "two machines under one name 'lab'" in str(e.value) and "--name r2=NAME" in str(e.value)
    assert "cpu_family: 26 / 23" in str(e.value)


def test_facts_give_the_default_name_and_a_rename_wins() -> None:
    found = machines.identify([row("r1", 400e9, ZEN5), row("r2", 190e9, ZEN2)], {"r2": "old box"})
    assert [m.name for m in found] == [ZEN5.default_name, "old box"]
    assert ZEN5.default_name.startswith("AMD EPYC 2 cores ") and ZEN5.default_name != ZEN2.default_name


def test_find_names_the_machines_there_are() -> None:
    found = machines.identify([row("r1", 400e9, ZEN5, "a"), row("r2", 190e9, ZEN2, "b")])
    assert machines.find(found, "b", "--baseline").name == "b"
    with pytest.raises(HarnessError, match=r"--baseline='c': it names no machine; expected one of: 'a'; 'b'"):
        machines.find(found, "c", "--baseline")


def test_facts_round_trip_and_say_what_differs() -> None:
    assert MachineFacts.from_json(ZEN5.to_json()) == ZEN5
    assert "cpu_flags: avx512f / -" in ZEN5.differences(ZEN2)
    quota = dataclasses.replace(ZEN5, cpu_quota=1.0)
    assert "(1 CPU quota)" in quota.default_name and quota.short_id != ZEN5.short_id


def test_a_run_has_a_peak_for_each_compute_dtype_it_trained_in_float32_first() -> None:
    bf16 = row("r1", 600e9)
    bf16 = dataclasses.replace(bf16, peak=dataclasses.replace(bf16.peak, peak_dtype="bfloat16", peak_cores=1))
    (m,) = machines.identify([bf16, row("r1", 200e9)])
    assert [(p.dtype, p.flops.value) for p in m.peaks] == [("float32", 200e9), ("bfloat16", 1200e9)]
    assert m.runs[0].peak == machines.peak_of(m.peaks, "float32") and m.runs[0].peak.value == 200e9
    assert machines.peak_of(m.peaks, "float16") == Estimate()
