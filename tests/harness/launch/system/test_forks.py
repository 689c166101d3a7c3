"""Fork servers: a forked worker's handle reads like ``subprocess.Popen`` (unit, a socket pair);
a killed harness takes its fork servers and their workers with it, and ``--no-fork`` starts
fresh interpreters (processes)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.contract.forks import PROGRAMS
from harness.launch.cells.peak import PeakLog
from harness.launch.system import forks
from harness.launch.system.forks import Forked
from harness.spec.protocol import Platform
from tests.harness.launch.cells.test_runner import FAST, ROOT, harness, worker_processes


def _pair() -> tuple[socket.socket, Forked]:
    server, parent = socket.socketpair()
    return server, Forked(parent, 4242)


def test_a_forked_workers_exit_code_comes_on_its_connection() -> None:
    server, forked = _pair()
    assert forked.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        forked.wait(0.05)
    server.sendall(json.dumps({"exit": 3}).encode()[:4])  # a partial line is not an exit
    assert forked.poll() is None
    server.sendall(json.dumps({"exit": 3}).encode()[4:] + b"\n")
    assert forked.wait(1.0) == 3 and forked.poll() == 3 and forked.returncode == 3
    server.close()


def test_a_server_that_dies_ends_its_workers_with_sigkill() -> None:
    server, forked = _pair()
    server.close()  # the server died: its workers got SIGKILL (PR_SET_PDEATHSIG)
    assert forked.wait(1.0) == -signal.SIGKILL


def test_only_the_programs_a_server_forks_are_asked_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    class Servers:
        def spawn(self, module, argv, env, log_path, python, out):  # type: ignore[no-untyped-def]
            asked.append(module)

    monkeypatch.setattr(forks, "_current", Servers())
    for module in ("harness.worker", "harness.worker.peak", "harness.worker.probe"):
        forks.spawn(module, [], {}, Path("log"), sys.executable)
    assert asked == ["harness.worker", "harness.worker.peak"] == list(PROGRAMS)  # the probe starts fresh


@pytest.mark.process
def test_the_peak_is_forked_from_the_workers_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    forked: list[str] = []
    spawn = forks.Server.spawn

    def counted(self, request):  # type: ignore[no-untyped-def]
        forked.append(request["module"])
        return spawn(self, request)

    monkeypatch.setattr(forks.Server, "spawn", counted)
    with forks.serving() as servers:
        peaks = PeakLog(Platform(), ("float32",))
        peaks.measure()
        peaks.measure()
        assert servers is not None and len(servers.servers) == 1
    assert forked == ["harness.worker.peak"] * 2 and not peaks.failures
    assert len(peaks.samples["float32"]) == 2 and min(peaks.samples["float32"]) > 0


CELL = "dense/default/r1w1/b32/acc1/ctl/spe5/float32/synthetic/weak"


@pytest.mark.process
def test_a_killed_harness_takes_its_fork_servers_and_workers_with_it(tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = {**os.environ, "HARNESS_INJECT_FAULT": f"hang:{CELL}", "TMPDIR": str(tmp_path)}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--model",
            "dense",
            "--strategy",
            "default",
            "--results",
            str(out),
            *FAST,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(worker_processes(str(tmp_path))) < 2 and time.monotonic() < deadline:  # server + worker
            time.sleep(0.5)
        found = worker_processes(str(tmp_path))
        assert any("forkserver" in cmd for cmd in found), found
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    deadline = time.monotonic() + 15
    while worker_processes(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert worker_processes(str(tmp_path)) == []


@pytest.mark.process
def test_no_fork_starts_fresh_interpreters(tmp_path: Path) -> None:
    out = tmp_path / "results"
    args = ("run", "--model", "dense", "--strategy", "default", "--results", str(out), *FAST)
    proc = harness(*args, "--no-fork", env={"TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    cells = pd.read_parquet(out / "cells")
    assert (cells.status == "ok").all() and not cells.forked.any()
    costs = pd.read_parquet(out / "costs")
    assert len(costs) == 1 and not costs.forked.iloc[0]
