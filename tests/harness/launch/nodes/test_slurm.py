"""``--cluster slurm`` through a real ``srun`` (slow; skipped where Slurm's srun is missing).

Needs a Slurm that can start 3 tasks at once on this machine: ``tools/slurm-localhost.sh`` brings up
a one-node one. Each job step runs with ``--wait``, as a batch script would: a task still running that
long after the first one exits is killed and the step fails, so srun's exit code 0 says that every
task (the parameter-server servers too) ended by itself with 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.results.store import read_cells
from tests.harness.launch.cells.test_runner import ROOT, worker_processes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.process,
    pytest.mark.skipif(shutil.which("srun") is None, reason="Slurm's srun is not installed"),
]

WAIT_S = 120
"""srun --wait: seconds the other tasks may run on after the first one exits."""
FAST = [
    "--no-peak",
    "--processes",
    "2",
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
    "--device",
    "cpu",
]


def _srun(tmp_path: Path, tasks: int, *args: str) -> subprocess.CompletedProcess[str]:
    """One job step of ``tasks`` tasks, each running ``harness run --cluster slurm``.
    ``--overcommit``: more tasks than CPUs is fine (3 tasks on a 2-CPU node)."""
    cmd = [
        "srun",
        f"--ntasks={tasks}",
        "--overcommit",
        f"--wait={WAIT_S}",
        "--label",
        sys.executable,
        "-m",
        "harness",
        "run",
        "--cluster",
        "slurm",
        "--results",
        str(tmp_path / "results"),
        *FAST,
        *args,
    ]
    return subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )


def _check(tmp_path: Path, proc: subprocess.CompletedProcess[str], strategy: str) -> None:
    out = proc.stdout[-4000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, out
    assert "First task exited" not in proc.stderr, out  # srun's --wait never had to kill a task
    cells = read_cells(tmp_path / "results")
    assert len(cells) == 1, out
    row = cells.iloc[0]
    assert row.status == "ok", row.reason
    assert row.strategy == strategy and row.examples_per_sec > 0
    assert worker_processes(str(tmp_path)) == []


def test_slurm_multi_worker_mirrored_step_exits_0(tmp_path: Path) -> None:
    proc = _srun(tmp_path, 2, "--strategy", "multi_worker_mirrored")
    _check(tmp_path, proc, "multi_worker_mirrored")
    assert "1: peer done: 1 cells finished, 0 failed" in proc.stdout, proc.stdout[-3000:]


def test_slurm_parameter_server_step_exits_0(tmp_path: Path) -> None:
    """Chief (rank 0), ps 0 (rank 1), worker 0 (rank 2): the servers end with 0 once the chief's run
    is over, long before --wait would kill them."""
    proc = _srun(tmp_path, 3, "--ps", "1")
    _check(tmp_path, proc, "parameter_server")
    for rank in (1, 2):
        assert f"{rank}: server done: the chief's run finished with exit code 0" in proc.stdout, proc.stdout[
            -3000:
        ]
