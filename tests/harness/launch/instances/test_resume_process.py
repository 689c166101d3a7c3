"""A real run killed with SIGKILL and resumed (``run --resume``), end to end: at each moment a kill
can come (while the first instances are measured, between groups, during the last peak), killed
twice; every cell measured once, nothing left running; a second run refused while one measures;
a truncated file named by ``check``, ``compare`` and ``report``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from harness.results.store import read_cells
from tests.harness.launch.cells.test_runner import harness

ROOT = Path(__file__).resolve().parents[4]
SMOKE = [
    "--sweep",
    "smoke",
    "--model",
    "dense",
    "--processes",
    "1",
    "--max-processes",
    "1",
    "--budget-min",
    "60",
]
"""The smoke sweep's dense cells (7, of which 6 run here), one instance per group, then the race of
the tied: about 50 s."""


def _start(tmp_path: Path, out: Path, *args: str) -> subprocess.Popen[str]:
    log = (tmp_path / f"run-{time.monotonic_ns()}.log").open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "run", *args, "--results", str(out)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )


def _harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return harness(*args, env={"TMPDIR": str(tmp_path)})


def _kinds(out: Path) -> list[str]:
    """The journal's entry kinds so far (a line being written is skipped)."""
    kinds = []
    for path in (out / "journal").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                kinds.append(json.loads(line)["kind"])
            except ValueError:
                pass
    return kinds


def _ours(tmp_path: Path, text: str = "harness") -> list[int]:
    """Live processes the runs started (their environment names ``tmp_path``) whose command line
    holds ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            env = (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().split(") ")[1][0]
        except (OSError, IndexError):
            continue
        if text in cmd and f"TMPDIR={tmp_path}".encode() in env and state != "Z":
            found.append(int(proc.name))
    return found


def _wait(what: str, condition: Callable[[], object], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _kill(tmp_path: Path, proc: subprocess.Popen[str]) -> None:
    """SIGKILL the run's parent; every process it started ends with it (their parent-death
    signal)."""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _wait("the run's processes to end", lambda: not _ours(tmp_path), timeout=30)


def _finished(tmp_path: Path, out: Path, resumes: int) -> pd.DataFrame:
    """Resume once more, to the end: every cell once, the measurable ones ok; its rows."""
    done = _harness(tmp_path, "run", "--resume", "latest", "--results", str(out))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "resumed:" in done.stdout.splitlines()[0]
    cells = pd.read_parquet(out / "cells")
    assert len(cells) == cells.cell_id.nunique() == 7, cells.cell_id.tolist()
    assert (cells.status == "ok").sum() == 6 and (cells.resumes == resumes).all()
    assert (cells[cells.status == "ok"].processes >= 1).all()
    kinds = _kinds(out)
    assert kinds.count("resumed") == resumes and kinds[-1] == "end"
    assert not _ours(tmp_path)
    return cells


@pytest.mark.slow  # 78 s on 2 cores (2026-11-25): the default tier keeps the other kill-and-resume test
@pytest.mark.process
def test_killed_between_groups_then_during_the_peak_resumes_to_every_cell_once(tmp_path: Path) -> None:
    out = tmp_path / "results"
    first = _start(tmp_path, out, *SMOKE)
    _wait("the journal", lambda: list((out / "journal").glob("*.jsonl")))

    other = _harness(tmp_path, "run", *SMOKE, "--results", str(tmp_path / "other"))
    assert (
        other.returncode == 1 and f"another measuring run holds this machine: pid {first.pid}" in other.stderr
    )
    assert not (tmp_path / "other" / "journal").exists()  # refused before any work

    _wait("the first instance", lambda: "instance" in _kinds(out))
    _kill(tmp_path, first)  # between groups: the next one was starting
    assert not list(out.glob("cells/**/*.parquet"))  # a SIGKILL writes no row: the journal has them

    second = _start(tmp_path, out, "--resume", "latest")
    _wait("the last peak", lambda: "races" in _kinds(out) and _ours(tmp_path, "harness.worker.peak"))
    _kill(tmp_path, second)
    assert "end" not in _kinds(out)

    cells = _finished(tmp_path, out, resumes=2)

    # a truncated file: named by every reader, the other rows read
    bad = sorted(out.glob("cells/**/*.parquet"))[3]
    bad.write_bytes(bad.read_bytes()[:64])
    check = _harness(tmp_path, "check", "--results", str(out))
    assert check.returncode == 1 and f"damaged: {bad}" in check.stdout
    for argv in (["compare"], ["report", "--report-dir", str(tmp_path / "report")]):
        read = _harness(tmp_path, *argv, "--results", str(out))
        assert f"warning: {bad} cannot be read" in read.stderr and "--resume" in read.stderr, read.stderr
    assert (tmp_path / "report" / "report.html").is_file()
    assert len(read_cells(out)) == len(cells) - 1


@pytest.mark.process
@pytest.mark.slow
def test_killed_while_the_first_instances_are_measured_resumes_to_every_cell_once(tmp_path: Path) -> None:
    out = tmp_path / "results"
    run = _start(tmp_path, out, *SMOKE)
    _wait(
        "the first group's workers",
        lambda: _ours(tmp_path, "harness.worker.forkserver") and "peak" in _kinds(out),
    )
    time.sleep(3)  # its members are starting or calibrating
    assert "instance" not in _kinds(out)
    _kill(tmp_path, run)

    _finished(tmp_path, out, resumes=1)
