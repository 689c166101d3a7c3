"""Multi-worker cells on 127.0.0.1 (MultiWorkerMirroredStrategy, ParameterServerStrategy): TF_CONFIG
processes, aggregation, faults (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.formulas import breakdown
from harness.launch.cells.local_cluster import (
    cluster_env,
    cores_per_task,
    free_ports,
    is_oversubscribed,
)
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from tests.harness.launch.cells.test_runner import (
    ROOT,
    assert_exit_names_failed_cells,
    harness,
    worker_processes,
)

FAST = [
    "--no-peak",
    "--no-breakdown",
    "--processes",
    "1",
    "--max-processes",
    "1",
    "--blocks",
    "2",
    "--turn-s",
    "0.1",
    "--repeats",
    "2",
    "--window-s",
    "0.1",
    "--warmup-windows",
    "0",
    "--min-window-steps",
    "5",
    "--steps-per-execution",
    "5",
    "--batch",
    "32",
    "--model",
    "dense",
]
MWMS = "dense/multi_worker_mirrored[ring]/r1w2/b32/acc1/ctl/spe5/float32/synthetic/weak"


PS = "dense/parameter_server/r1w2p1/b32/acc1/ctl/spe5/float32/synthetic/weak"


def test_cluster_env_and_ports() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    addresses = [f"127.0.0.1:{p}" for p in ports]
    cell = Cell(strategy="multi_worker_mirrored", workers=3)
    tasks = cell.tasks
    assert [t.label for t in tasks] == ["worker 0 (chief)", "worker 1", "worker 2"]
    env = cluster_env(cell, tasks, addresses, 1, 4, Platform())
    config = json.loads(env["TF_CONFIG"])
    assert config["cluster"] == {"worker": addresses}
    assert config["task"] == {"type": "worker", "index": 1}
    assert env["TF_NUM_INTRAOP_THREADS"] == "4" and env["CUDA_VISIBLE_DEVICES"] == "-1"
    gpu = cluster_env(
        Cell(strategy="multi_worker_mirrored", workers=3, replicas=2),
        tasks,
        addresses,
        1,
        4,
        Platform("gpu", 4),
    )
    assert gpu["CUDA_VISIBLE_DEVICES"] == "2,3" and gpu["HIP_VISIBLE_DEVICES"] == "2,3"
    # a parent masked to GPUs 4-7, or MIG instances: the workers' masks name the usable ones
    masked = Platform("gpu", 4, gpu_ids=("4", "5", "6", "7"))
    assert (
        cluster_env(
            Cell(strategy="multi_worker_mirrored", workers=3, replicas=2), tasks, addresses, 1, 4, masked
        )["CUDA_VISIBLE_DEVICES"]
        == "6,7"
    )
    mig = Platform("gpu", 3, gpu_ids=("MIG-a", "MIG-b", "MIG-c"), mig=True)
    assert cluster_env(cell, tasks, addresses, 2, 4, mig)["CUDA_VISIBLE_DEVICES"] == "MIG-c"


def test_parameter_server_tasks_env_and_cores() -> None:
    cell = Cell(strategy="parameter_server", workers=2, ps=1)
    tasks = cell.tasks
    assert [(t.type, t.index, t.role) for t in tasks] == [
        ("chief", 0, "chief"),
        ("worker", 0, "server"),
        ("worker", 1, "server"),
        ("ps", 0, "server"),
    ]
    assert [t.label for t in tasks] == ["chief", "worker 0", "worker 1", "ps 0"]
    addresses = [f"127.0.0.1:{p}" for p in (1001, 1002, 1003, 1004)]
    two = Cell(strategy="parameter_server", workers=2, ps=1, replicas=2)
    masks = [
        cluster_env(two, tasks, addresses, i, 1, Platform("gpu", 4))["CUDA_VISIBLE_DEVICES"] for i in range(4)
    ]
    assert masks == ["-1", "0,1", "2,3", "-1"]  # GPUs for the workers only
    config = json.loads(cluster_env(cell, tasks, addresses, 3, 1, Platform())["TF_CONFIG"])
    assert config["cluster"] == {"chief": addresses[:1], "worker": addresses[1:3], "ps": addresses[3:]}
    assert config["task"] == {"type": "ps", "index": 0}
    assert cores_per_task(cell, 16) == 5 and cores_per_task(cell, 2) == 1
    assert is_oversubscribed(cell, 1, 2) and not is_oversubscribed(cell, 5, 16)
    mwms = Cell(strategy="multi_worker_mirrored", workers=2)
    assert cores_per_task(mwms, 16) == 8 and not is_oversubscribed(mwms, 8, 16)


def test_the_absent_task_hook_finds_its_cell_among_several_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.contract.job import FAULT_ENV
    from harness.launch.cells.local_cluster import absent_worker

    ps = Cell(strategy="parameter_server", workers=2, ps=1)
    mwms = Cell(strategy="multi_worker_mirrored", workers=2)
    monkeypatch.setenv(FAULT_ENV, f"kill@1:{mwms.id};absent@3:{ps.id}")
    assert absent_worker(ps) == 3 and absent_worker(mwms) is None


def _run(
    tmp_path: Path, *args: str, fault: str = "", breakdown: bool = False
) -> tuple[subprocess.CompletedProcess[str], pd.DataFrame]:
    out = tmp_path / "results"
    env = {"TMPDIR": str(tmp_path), **({"HARNESS_INJECT_FAULT": fault} if fault else {})}
    fast = [*(a for a in FAST if a != "--no-breakdown"), "--breakdown"] if breakdown else FAST
    proc = harness("run", "--results", str(out), *fast, "--processes", "1", *args, env=env)
    assert worker_processes(str(tmp_path)) == []
    cells = pd.read_parquet(out / "cells").set_index("cell_id")
    assert_exit_names_failed_cells(proc, cells)
    return proc, cells


@pytest.mark.process
def test_two_worker_cell_measures_every_worker(tmp_path: Path) -> None:
    _, cells = _run(
        tmp_path,
        "--strategy",
        "multi_worker_mirrored",
        "--communication",
        "ring",
        "--workers",
        "2",
        breakdown=True,
    )
    row = cells.loc[MWMS]
    assert row.status == "ok", row.reason
    assert row.examples_per_sec > 0 and row.global_batch == 64 and row.effective_batch == 64
    assert row.allreduces_per_update == pytest.approx(1 + 1 / 5)  # gradients, and the loss per call
    assert pd.isna(row.straggler_ratio)  # synchronous: every worker's window ends at the all-reduce
    assert row.effective_cross_device_ops == "CollectiveAllReduce(RING)"
    assert row.cores_per_worker == max(1, (os.cpu_count() or 1) // 2)
    # the parts of an update, timed in lock-step on both workers (the all-reduce is a collective)
    assert row.compute_s > 0 and row.allreduce_s > 0 and row.input_s > 0 and row.dispatch_s > 0
    assert 0 < row.reduce_s < row.allreduce_s  # a scalar's reduction: latency without the bytes
    # each a piece of the synchronised update timed alongside them (noise allowance: NOISE's doc)
    for part in breakdown.PARTS:
        assert row[part] <= row.parts_step_s * (1 + breakdown.NOISE), row.bound_reason
    assert row.bound in {"compute", "communication", "input", "dispatch"} or row.bound_reason.startswith(
        "no part bounds it"
    ), row.bound_reason
    windows = pd.read_parquet(tmp_path / "results" / "windows")
    assert sorted(windows.worker.unique()) == [0, 1] and len(windows) == 2 * row.repeats  # its turns
    assert (windows.worker_s <= windows.window_s + 1e-9).all()


@pytest.mark.slow  # 18 s on 2 cores (2026-11-27): the default tier keeps the parameter-server worker
# killed mid-cell (the same path of run_cluster: a task that exits ends the cell, naming it and its
# signal) and tests/harness/launch/cells/test_runner.py's killed worker (the sweep goes on)
@pytest.mark.process
def test_killed_worker_fails_the_cell_and_the_sweep_goes_on(tmp_path: Path) -> None:
    t0 = time.monotonic()
    _, cells = _run(
        tmp_path,
        "--strategy",
        "mirrored,multi_worker_mirrored",
        "--communication",
        "ring",
        "--workers",
        "2",
        fault=f"kill@1:{MWMS}",
    )
    assert cells.loc[MWMS, "status"] == "failed"
    reason = cells.loc[MWMS, "reason"]
    assert "worker 1 exited with signal SIGKILL" in reason, reason
    mirrored = cells.drop(MWMS)
    assert len(mirrored) == 1 and (mirrored.status == "ok").all()
    assert time.monotonic() - t0 < 180


@pytest.mark.slow  # 20 s on 2 cores (2026-11-27): the default tier keeps the parameter server that
# never appears (the same rendezvous deadline of run_cluster, naming the task not there)
@pytest.mark.process
def test_peer_that_never_appears_fails_at_the_rendezvous_deadline(tmp_path: Path) -> None:
    _, cells = _run(
        tmp_path,
        "--strategy",
        "multi_worker_mirrored",
        "--communication",
        "ring",
        "--workers",
        "2",
        "--rendezvous-timeout-s",
        "8",
        fault=f"absent@1:{MWMS}",
    )
    reason = cells.loc[MWMS, "reason"]
    assert cells.loc[MWMS, "status"] == "failed"
    assert "deadline passed: rendezvous" in reason and "8 s" in reason and "(worker 1 not there)" in reason


@pytest.mark.process
def test_two_workers_match_two_mirrored_replicas_in_verify() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "verify",
            "--device",
            "cpu",
            "--model",
            "dense",
            "--strategy",
            "mirrored,multi_worker_mirrored",
            "--communication",
            "ring",
            "--replicas",
            "1,2",
            "--workers",
            "2",
            "--batch",
            "32",
            "--steps-per-execution",
            "1",
            "--updates",
            "4",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    line = next(s for s in proc.stdout.splitlines() if "multi_worker_mirrored" in s and "r1w2" in s)
    assert "agrees" in line
    # 2 workers of 2 replicas need 4 devices: refused, and said so, while the others train
    line = next(s for s in proc.stdout.splitlines() if "multi_worker_mirrored" in s and "r2w2" in s)
    assert "unsupported: " in line, line


@pytest.mark.process
def test_parameter_server_cell_counts_updates_at_the_coordinator(tmp_path: Path) -> None:
    _, cells = _run(tmp_path, "--strategy", "parameter_server", "--workers", "2", "--ps", "1", breakdown=True)
    row = cells.loc[PS]
    assert row.status == "ok", row.reason
    # its costs across the link, timed apart: every variable read from the ps, and updated there
    assert row.ps_read_s > 0 and row.ps_update_s > 0 and row.parts_step_s > 0
    assert pd.isna(row.compute_s) and pd.isna(row.bound)  # no parts of its own: no verdict
    assert row.examples_per_sec > 0 and row.ps == 1 and row.effective_batch == 32
    assert row.global_batch == 64 and row.straggler_ratio >= 1.0
    # Keras 3 loses iteration increments under concurrent workers; never gains any
    assert 0 < row.optimizer_iterations <= row.updates_run
    windows = pd.read_parquet(tmp_path / "results" / "windows")
    assert sorted(windows.worker.unique()) == [0, 1] and windows.worker_s.isna().all()
    per_window = windows.groupby("repeat").agg(
        updates=("worker_updates", "sum"), steps=("window_steps", "first")
    )
    assert (per_window.updates == per_window.steps).all()


@pytest.mark.process
def test_parameter_server_worker_killed_mid_cell_fails_the_cell(tmp_path: Path) -> None:
    t0 = time.monotonic()
    # worker 0 dies 8 s after joining: after the chief's start-up (it had joined and was timing
    # windows 3 s after on 2 cores, 2026-11-27), long before 30 turns of 2 s end
    _, cells = _run(
        tmp_path,
        "--strategy",
        "parameter_server",
        "--workers",
        "2",
        "--turn-s",
        "2",
        "--blocks",
        "15",
        fault=f"kill@1+8:{PS}",
    )
    reason = cells.loc[PS, "reason"]
    assert cells.loc[PS, "status"] == "failed"
    assert "worker 0 exited with signal SIGKILL during cell" in reason, reason
    assert time.monotonic() - t0 < 120


@pytest.mark.process
def test_parameter_server_that_never_appears_fails_at_the_rendezvous(tmp_path: Path) -> None:
    _, cells = _run(
        tmp_path,
        "--strategy",
        "parameter_server",
        "--workers",
        "2",
        "--rendezvous-timeout-s",
        "4",
        fault=f"absent@3:{PS}",
    )
    reason = cells.loc[PS, "reason"]
    assert cells.loc[PS, "status"] == "failed"
    assert "deadline passed: rendezvous" in reason and "(ps 0 not there)" in reason, reason
    assert "4 s" in reason, reason


def _verify_parameter_server(workers: str) -> list[str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "verify",
            "--device",
            "cpu",
            "--model",
            "dense",
            "--strategy",
            "default,parameter_server",
            "--workers",
            workers,
            "--batch",
            "32",
            "--steps-per-execution",
            "1",
            "--updates",
            "3",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout.splitlines()


@pytest.mark.process
def test_parameter_server_on_one_worker_matches_one_device_in_verify() -> None:
    lines = _verify_parameter_server("1")
    assert "agrees" in next(s for s in lines if "parameter_server/r1w1p1" in s)
    assert "all 1 compared cells agree" in "\n".join(lines), lines[-3:]


@pytest.mark.slow  # 39 s on 2 cores (2026-11-27), 17 s of it the 2-worker cell: the default tier keeps
# the 1-worker cell above (a parameter-server cell trained and compared in verify) and the
# verdict on asynchronous cells in tests/harness/analysis/run/test_verdicts.py
@pytest.mark.process
def test_parameter_server_on_two_workers_is_run_but_not_compared_in_verify() -> None:
    lines = _verify_parameter_server("1,2")
    assert "agrees" in next(s for s in lines if "parameter_server/r1w1p1" in s)
    assert "not compared: asynchronous" in next(s for s in lines if "parameter_server/r1w2p1" in s)


def _task_env(tmp_path: Path, cluster: dict[str, list[str]], kind: str, index: int) -> dict[str, str]:
    config = {"cluster": cluster, "task": {"type": kind, "index": index}}
    return {**os.environ, "TF_CONFIG": json.dumps(config), "TMPDIR": str(tmp_path)}


def _start_task(
    tmp_path: Path, cluster: dict[str, list[str]], kind: str, index: int, *args: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--cluster",
            "tf_config",
            "--device",
            "cpu",
            "--results",
            str(tmp_path / f"{kind}{index}"),
            *FAST,
            *args,
        ],
        cwd=ROOT,
        env=_task_env(tmp_path, cluster, kind, index),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.process
def test_tf_config_cluster_runs_every_cell_and_only_the_chief_writes(tmp_path: Path) -> None:
    """Two tasks started as a scheduler would, each with its own TF_CONFIG; two cells in a row on
    the same addresses."""
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    tasks = [_start_task(tmp_path, cluster, "worker", i, "--communication", "ring,auto") for i in range(2)]
    outputs = [t.communicate(timeout=400)[0] for t in tasks]
    assert [t.returncode for t in tasks] == [0, 0], outputs
    cells = pd.read_parquet(tmp_path / "worker0" / "cells")
    assert len(cells) == 2 and (cells.status == "ok").all(), cells.reason.tolist()
    assert (cells.workers == 2).all() and (cells.examples_per_sec > 0).all()
    assert not (tmp_path / "worker1" / "cells").exists()  # only the chief writes results
    cells_done = [line for line in outputs[1].splitlines() if line.startswith("finished ")]
    assert len(cells_done) == 2 and "peer done: 2 cells finished, 0 failed" in outputs[1]
    assert worker_processes(str(tmp_path)) == []


@pytest.mark.process
def test_tf_config_parameter_server_cluster_serves_every_cell(tmp_path: Path) -> None:
    """A chief, two workers and a ps started by hand: the servers live for the whole run (between
    cells too), each cell's coordinator is a fresh process; the servers end with 0 by themselves
    once the chief's run is over (the chief's run lease)."""
    addresses = [f"127.0.0.1:{p}" for p in free_ports(4)]
    cluster = {"chief": addresses[:1], "worker": addresses[1:3], "ps": addresses[3:]}
    servers = [
        _start_task(tmp_path, cluster, kind, i) for kind, i in (("worker", 0), ("worker", 1), ("ps", 0))
    ]
    chief = _start_task(tmp_path, cluster, "chief", 0, "--accum-steps", "1,2")
    try:
        out = chief.communicate(timeout=400)[0]
        done = time.monotonic()
        outputs = [s.communicate(timeout=30)[0] for s in servers]
        after_chief_s = time.monotonic() - done
    finally:
        for s in servers:  # only if they did not end by themselves
            if s.poll() is None:
                s.kill()
                s.wait()
    assert chief.returncode == 0, out
    cells = pd.read_parquet(tmp_path / "chief0" / "cells")
    assert len(cells) == 2 and (cells.status == "ok").all(), cells.reason.tolist()
    assert (cells.strategy == "parameter_server").all() and (cells.ps == 1).all()
    assert [s.returncode for s in servers] == [0, 0, 0], outputs
    assert all("the chief's run finished with exit code 0" in o for o in outputs), outputs
    assert after_chief_s < 30
    assert worker_processes(str(tmp_path)) == []


@pytest.mark.process
def test_tf_config_servers_fail_when_the_chief_is_killed(tmp_path: Path) -> None:
    """A chief killed mid-run (SIGKILL: no word to anyone): its servers notice the lost lease,
    stop their server processes and exit 1, at once."""
    addresses = [f"127.0.0.1:{p}" for p in free_ports(3)]
    cluster = {"chief": addresses[:1], "worker": addresses[1:2], "ps": addresses[2:]}
    servers = [_start_task(tmp_path, cluster, kind, 0) for kind in ("worker", "ps")]
    chief = _start_task(tmp_path, cluster, "chief", 0, "--window-s", "2", "--repeats", "30")
    try:
        for line in chief.stdout or ():  # the run lease is open once the chief says so
            if line.startswith("run lease on port"):
                break
        time.sleep(5)
        chief.kill()
        chief.wait()
        outputs = [s.communicate(timeout=30)[0] for s in servers]
    finally:
        for p in (chief, *servers):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [s.returncode for s in servers] == [1, 1], outputs
    assert all("lost the chief's run lease" in o for o in outputs), outputs
    deadline = time.monotonic() + 15  # the chief's cell process dies with it (PR_SET_PDEATHSIG)
    while worker_processes(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert worker_processes(str(tmp_path)) == []


@pytest.mark.slow
@pytest.mark.process
def test_parameter_server_straggler_shows_in_the_update_imbalance(tmp_path: Path) -> None:
    """A worker sharing core 0 with a busy loop runs fewer of the coordinator's updates: the
    straggler figure sees it (against the same cell without the fault)."""
    args = ("--strategy", "parameter_server", "--workers", "2", "--window-s", "1", "--repeats", "3")
    _, calm = _run(tmp_path / "calm", *args)
    _, slow = _run(tmp_path / "slow", *args, fault=f"busy@2:{PS}")
    assert calm.loc[PS, "status"] == "ok" and slow.loc[PS, "status"] == "ok"
    print(
        f"update imbalance: calm {calm.loc[PS, 'straggler_ratio']:.2f}, "
        f"straggler {slow.loc[PS, 'straggler_ratio']:.2f}"
    )
    # measured on 2 cores: calm 1.08, with the straggler 1.43
    assert slow.loc[PS, "straggler_ratio"] >= 1.25
    assert slow.loc[PS, "straggler_ratio"] > 1.2 * calm.loc[PS, "straggler_ratio"]


def _until_ended(procs: dict[str, subprocess.Popen[str]], timeout_s: float = 400) -> dict[str, float]:
    """When (Unix s) each task ended; every task is killed if it outlives ``timeout_s``."""
    ended: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(ended) < len(procs) and time.monotonic() < deadline:
            ended.update(
                {k: time.time() for k, p in procs.items() if k not in ended and p.poll() is not None}
            )
            time.sleep(0.1)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    return ended


@pytest.mark.process
def test_tf_config_a_peers_failed_part_fails_the_chiefs_cell_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker 1's cell process dies 2 s into the cell (its ``harness run`` lives on): it tells the
    chief over the run lease, and the chief's row names it at once instead of waiting for its
    cell's deadline; the run exits 1 and leaves nothing running."""
    monkeypatch.setenv("HARNESS_INJECT_FAULT", f"kill@1+2:{MWMS}")
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    slow = ("--communication", "ring", "--repeats", "40", "--window-s", "1")
    procs = {f"worker {i}": _start_task(tmp_path, cluster, "worker", i, *slow) for i in range(2)}
    ended = _until_ended(procs)
    outputs = {k: p.communicate()[0] for k, p in procs.items()}
    (row,) = pd.read_parquet(tmp_path / "worker0" / "cells").itertuples()
    assert row.status == "failed" and row.reason.startswith("worker 1 on 127.0.0.1: its part failed:"), (
        row.reason
    )
    assert "SIGKILL" in row.reason or "signal 9" in row.reason, row.reason
    assert procs["worker 0"].returncode == 1, outputs
    written = pd.Timestamp(row.timestamp).timestamp()
    print(
        f"row written {written - ended['worker 1']:+.1f} s from the peer's end; chief ended {ended['worker 0'] - written:+.1f} s after"
    )
    assert f"failed {MWMS}" in outputs["worker 1"]
    assert worker_processes(str(tmp_path)) == []


@pytest.mark.process
def test_tf_config_a_servers_exit_reason_reaches_the_chief(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ps task's server process dies 3 s after it started: the ps task tells the chief why
    (``exit`` on the run lease) and ends 1; the chief's failed row names ps 0, its host and that
    reason, within seconds; the chief exits 1 and the worker's server ends by itself."""
    ps1 = PS.replace("r1w2p1", "r1w1p1")
    monkeypatch.setenv("HARNESS_INJECT_FAULT", f"kill@2+3:{ps1}")
    addresses = [f"127.0.0.1:{p}" for p in free_ports(3)]
    cluster = {"chief": addresses[:1], "worker": addresses[1:2], "ps": addresses[2:]}
    procs = {
        f"{k} 0": _start_task(tmp_path, cluster, k, 0, "--repeats", "40", "--window-s", "1")
        for k in ("worker", "ps")
    }
    procs["chief 0"] = _start_task(tmp_path, cluster, "chief", 0, "--repeats", "40", "--window-s", "1")
    ended = _until_ended(procs)
    outputs = {k: p.communicate()[0] for k, p in procs.items()}
    (row,) = pd.read_parquet(tmp_path / "chief0" / "cells").itertuples()
    assert row.status == "failed" and row.reason.startswith("ps 0 on 127.0.0.1 was lost at"), row.reason
    assert "(it exited: its server process exited with" in row.reason, row.reason
    assert {k: p.returncode for k, p in procs.items()} == {"chief 0": 1, "worker 0": 0, "ps 0": 1}, outputs
    written = pd.Timestamp(row.timestamp).timestamp()
    print(
        f"row written {written - ended['ps 0']:+.1f} s from the ps task's end; chief ended {ended['chief 0'] - written:+.1f} s after"
    )
    assert written - ended["ps 0"] < 30
    assert worker_processes(str(tmp_path)) == []
