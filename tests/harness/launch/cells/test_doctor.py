"""harness doctor: warnings and probe bookkeeping (pure), and the real JSON on this CPU machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.contract.probes import (
    WORKER_PROBE_STRATEGY,
    Build,
    Device,
    GpuProcess,
    OsGpu,
    ProbeFacts,
    ProbeStatus,
    Threads,
    local_probes,
    parse,
)
from harness.launch.cells import doctor
from harness.launch.system import gpus
from harness.worker.probe import judge

WORKS, WRONG, FAILS, UNSUPPORTED = (
    ProbeStatus.WORKS,
    ProbeStatus.WRONG,
    ProbeStatus.FAILS,
    ProbeStatus.UNSUPPORTED,
)

ROOT = Path(__file__).resolve().parents[4]

FACTS = ProbeFacts(
    [Device("/physical_device:GPU:0", "GPU", "NVIDIA H100", "NVIDIA", [9, 0])],
    ["/device:GPU:0"],
    "GPU",
    "2.21.0",
    "3.15.1",
    Build(is_cuda_build=True),
    Threads(0, 0, 16, 16),
    {"/physical_device:GPU:0": False},
    {},
)


def test_judge_checks_every_replica_sum() -> None:
    assert judge([6.0, 6.0, 6.0], 3)[0] == WORKS
    status, detail = judge([3.0, 3.0, 3.0], 3)
    assert status == WRONG and "expected 6" in detail


def test_local_probes_per_replica_count() -> None:
    assert local_probes(1) == [("one_device", "-"), ("mirrored", "auto")]
    assert ("mirrored", "hierarchical_copy") in local_probes(3)
    assert ("one_device", "-") not in local_probes(2)
    assert local_probes(2) == [
        ("mirrored", "auto"),
        ("mirrored", "reduction_to_one_device"),
        ("mirrored", "hierarchical_copy"),
        ("central_storage", "-"),
        ("mirrored", "nccl"),
    ]


def test_the_worker_probes_use_the_collective_multi_worker_strategy() -> None:
    assert WORKER_PROBE_STRATEGY == "multi_worker_mirrored"


def test_a_probe_process_that_died_fails_the_probes_it_never_reported() -> None:
    lines = [
        {
            "kind": "probe",
            "strategy": "mirrored",
            "cross_device_ops": "auto",
            "replicas": 2,
            "status": WORKS,
            "detail": "sum 3",
            "effective": "CollectiveAllReduce",
        }
    ]
    probes = doctor.collect_local(2, parse(lines)[1], doctor.ended_as(-11, "Segmentation fault"))
    assert probes[0].status == WORKS
    rest = [p for p in probes if p.cross_device_ops != "auto"]
    assert rest and all(p.status == FAILS and "died with signal 11" in p.detail for p in rest)


def test_mixed_vendors_other_gpu_processes_and_memory_growth_are_warned_about() -> None:
    os_list = [OsGpu("card0", "NVIDIA", "0000:01:00.0"), OsGpu("card1", "AMD", "0000:02:00.0")]
    procs = [GpuProcess(0, 4242, 3 * 2**30), GpuProcess(0, 1, 2**30)]
    warnings = doctor.warnings(FACTS, os_list, procs, {1}, [])
    text = "\n".join(warnings)
    assert "mixed GPU vendors" in text and "1 AMD and 1 NVIDIA" in text and "CUDA (NVIDIA)" in text
    assert "GPU 0: 1 other process(es) hold 3.0 GiB (pids 4242)" in text
    assert "memory growth is off" in text


def test_wrong_sums_are_warned_about() -> None:
    probe = doctor.Probe("mirrored", "hierarchical_copy", 3, WRONG, "returned [3.0], expected 6")
    assert any("silently wrong" in w for w in doctor.warnings(FACTS, [], [], set(), [probe]))


def test_os_gpus_reads_pci_vendors(tmp_path: Path) -> None:
    for card, vendor in (("card0", "0x10de"), ("card1", "0x1002")):
        (tmp_path / card / "device").mkdir(parents=True)
        (tmp_path / card / "device" / "vendor").write_text(vendor + "\n")
    (tmp_path / "card0-DP-1").mkdir()  # a connector, not a card
    assert [(g.card, g.vendor) for g in gpus.os_gpus(tmp_path)] == [("card0", "NVIDIA"), ("card1", "AMD")]


@pytest.mark.process
def test_doctor_json_on_this_cpu_machine() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "doctor", "--json", "--device", "cpu"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["facts"]["logical"] == [f"/device:CPU:{i}" for i in range(3)]
    status = {(p["strategy"], p["cross_device_ops"], p["replicas"]): p for p in report["probes"]}
    assert status[("mirrored", "nccl", 2)]["status"] == UNSUPPORTED
    assert "NcclAllReduce" in status[("mirrored", "nccl", 2)]["detail"]
    assert status[("mirrored", "hierarchical_copy", 3)]["status"] == WRONG
    assert status[("mirrored", "hierarchical_copy", 2)]["status"] == WORKS
    assert status[("mirrored", "auto", 3)]["status"] == WORKS
    assert status[("multi_worker_mirrored", "ring", 2)]["status"] == WORKS
    assert any("hierarchical_copy on 3 replicas returns wrong sums" in w for w in report["warnings"])
    assert "network namespace of its own" in report["ports"] or "--open-ports" in report["ports"]


@pytest.mark.process
def test_doctor_refuses_bad_replica_counts_before_probing() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "doctor", "--replicas", "0,x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--replicas='0,x'" in proc.stderr


def test_on_one_gpu_whose_memory_is_known_doctor_also_probes_two_logical_gpus() -> None:
    assert doctor.default_replica_counts(1) == [1]
    assert doctor.default_replica_counts(1, logical=True) == [1, 2]
    assert doctor.default_replica_counts(4, logical=True) == [1, 2, 3, 4, 8]
    assert doctor.default_replica_counts(0, logical=True) == [2, 3]


def test_a_probe_on_logical_gpus_plans_and_says_the_split() -> None:
    from harness.worker.probe import platform_of, where

    one = platform_of("GPU", 2, gpu_count=1, memory_mib=80_000)
    assert one.logical_gpus(2) is not None and one.logical_gpus(2).memory_mib == 36_000  # type: ignore[union-attr]
    assert where(one, 2) == "2 logical GPUs on 1 GPU(s), 36000 MiB each: "
    assert where(platform_of("GPU", 2, gpu_count=2, memory_mib=80_000), 2) == ""  # a GPU each
    assert where(platform_of("GPU", 2), 2) == ""  # the GPU count unknown: a GPU per replica
    assert where(platform_of("CPU", 3), 3) == ""


def test_where_no_namespace_can_be_made_the_worker_probe_is_not_started() -> None:
    from harness.spec.ports import OPEN_PORTS_FLAG, REFUSED

    (probe,) = doctor._worker_probes("CPU", 0, 1.0, REFUSED)  # no process: none is started
    assert probe.strategy == WORKER_PROBE_STRATEGY and probe.workers == doctor.MWMS_WORKERS
    assert (
        probe.status == "not probed" and "every interface" in probe.detail and OPEN_PORTS_FLAG in probe.detail
    )


def test_the_report_names_the_machine_and_its_facts_in_two_lines() -> None:
    from harness.analysis.pages.doctor import Report, render
    from harness.contract.machine import MachineFacts

    facts = MachineFacts(cpu_model="AMD EPYC", cpu_flags="avx2 fma", cores=2, cpu_quota=1.0, memory_gib=24)
    cpu = [Device("/physical_device:CPU:0", "CPU", "", "", [])]
    seen = ProbeFacts(cpu, ["/device:CPU:0"], "CPU", "2.21.0", "3.15.1", Build(), Threads(0, 0, 2, 2), {}, {})
    lines = render(Report(seen, [], [], "", [], machine=doctor.machine_text(facts))).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Machine: "))
    assert (
        lines[at]
        == f"Machine: AMD EPYC 2 cores (1 CPU quota) {facts.short_id} (run --machine NAME names it otherwise)"
    )
    assert lines[at + 1] == "  AMD EPYC, 2 cores, a 1-CPU quota, 24 GiB, 2 CPU flags; no GPU"


def test_the_facts_line_reads_back_as_written_and_json_keeps_its_keys() -> None:
    from dataclasses import asdict

    from harness.analysis.pages.doctor import Report, to_json_text

    line = json.loads(json.dumps({"kind": "facts", **asdict(FACTS)}))
    assert parse([line, {"kind": "other"}]) == (FACTS, [])
    out = json.loads(to_json_text(Report(FACTS, [], [], "", [])))
    assert (
        list(out["facts"]) == ["kind", *asdict(FACTS)]
        and out["facts"]["physical"][0]["model"] == "NVIDIA H100"
    )
