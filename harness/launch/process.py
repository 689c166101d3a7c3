"""The only module that starts processes or signals other processes, and that sets environment
variables for them.

:func:`run_worker` starts one worker process for one cell and yields its events. Deadlines:
``startup_timeout_s`` until the cell starts, ``protocol.cell_timeout_s`` for the cell. A worker that
dies or passes a deadline is stopped (SIGTERM to its process group, SIGKILL after ``KILL_GRACE_S``)
and the cell becomes a ``failed`` event with the phase, the cause and the tail of the worker's log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.launch.contract import (
    WORKER_ENV,
    Job,
    Launch,
    WorkerOptions,
    injected_fault,
)
from harness.spec.cell import Cell

KILL_GRACE_S = 5.0


POLL_S = 0.1


STDERR_TAIL_LINES = 12


def _signal_name(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def stop(proc: subprocess.Popen[bytes], grace_s: float = KILL_GRACE_S) -> str:
    """SIGTERM the worker's process group, SIGKILL it after ``grace_s``; returns what it took."""
    if proc.poll() is not None:
        return "already exited"
    how = "SIGTERM"
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        how = "SIGTERM, then SIGKILL"
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return how


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGKILL when the parent dies (even by SIGKILL), so a
    worker in its own session never outlives the run."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Events:
    """Reads complete JSON lines appended to a file by a worker."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, ""

    def read(self) -> list[dict[str, Any]]:
        with open(self.path) as f:
            f.seek(self.offset)
            chunk = f.read()
            self.offset = f.tell()
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        return [json.loads(line) for line in lines if line.strip()]


def _start(cell: Cell, options: WorkerOptions, name: str, tmp: Path, launch: Launch = Launch()
           ) -> tuple[subprocess.Popen[bytes], _Events, Path]:
    job = Job(cell, options.protocol, options.platform, options.mnist_path, injected_fault(),
              options.verify_updates, options.weights_dir, launch.index, launch.cores, launch.role,
              launch.hosts, launch.oversubscribed)
    job_path, events_path = tmp / f"job-{launch.index}.json", tmp / f"events-{launch.index}.jsonl"
    job_path.write_text(json.dumps(job.to_json()))
    events_path.touch()
    options.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = options.log_dir / f"{name}.log"
    env = {**os.environ, **WORKER_ENV, **dict(launch.env)}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.worker", str(job_path), str(events_path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True, preexec_fn=_die_with_parent)
    return proc, _Events(events_path), log_path
