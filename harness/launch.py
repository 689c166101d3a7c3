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
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.spec import Cell, Platform, Protocol, SpecError
from harness.worker import Job

KILL_GRACE_S = 5.0
POLL_S = 0.1
STDERR_TAIL_LINES = 12
WORKER_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
FAULT_ENV = "HARNESS_INJECT_FAULT"
"""Test hook, passed to workers: ``kill:<cell_id>`` or ``hang:<cell_id>``."""


# ------------------------------------------------------------------------------------------------
# Facts from the environment, without TensorFlow
# ------------------------------------------------------------------------------------------------


def count_nvidia_gpus() -> int:
    """GPUs that ``nvidia-smi -L`` lists (0 without the tool or a driver)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    n = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    if visible is not None:
        n = min(n, len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"]))
    return n


DEVICE_CHOICES = ("auto", "cpu", "gpu")


def detect_platform(device: str = "auto", cpu_devices: int = 2) -> Platform:
    """The Platform to plan for: GPUs if ``nvidia-smi`` sees any (or ``device="gpu"``), else CPU
    with ``cpu_devices`` logical devices."""
    if device not in DEVICE_CHOICES:
        raise SpecError(f"Received --device={device!r}; expected one of: {', '.join(DEVICE_CHOICES)}.")
    if cpu_devices < 1:
        raise SpecError(f"Received --cpu-devices={cpu_devices!r}; expected an integer of at least 1.")
    gpus = count_nvidia_gpus() if device != "cpu" else 0
    if device == "gpu" and gpus == 0:
        raise SpecError("Received --device=gpu, but nvidia-smi lists no GPU; expected --device cpu or auto.")
    return Platform("gpu" if gpus else "cpu", gpus, cpu_devices)


def git_sha() -> str:
    """Short commit of the suite's checkout, or "" outside git."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def injected_fault() -> str | None:
    return os.environ.get(FAULT_ENV) or None


# ------------------------------------------------------------------------------------------------
# Worker processes
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerOptions:
    """What a worker needs besides its cells. ``startup_timeout_s``: seconds to import TensorFlow and
    set up devices."""

    protocol: Protocol
    platform: Platform
    log_dir: Path
    mnist_path: str | None = None
    startup_timeout_s: float = 180.0
    verify_updates: int | None = None
    weights_dir: str | None = None


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


def _start(cell: Cell, options: WorkerOptions, name: str, tmp: Path
           ) -> tuple[subprocess.Popen[bytes], _Events, Path]:
    job = Job(cell, options.protocol, options.platform, options.mnist_path, injected_fault(),
              options.verify_updates, options.weights_dir)
    job_path, events_path = tmp / "job.json", tmp / "events.jsonl"
    job_path.write_text(json.dumps(job.to_json()))
    events_path.touch()
    options.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = options.log_dir / f"{name}.log"
    env = {**os.environ, **WORKER_ENV}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.worker", str(job_path), str(events_path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True, preexec_fn=_die_with_parent)
    return proc, _Events(events_path), log_path


def run_worker(cell: Cell, options: WorkerOptions, name: str = "worker"
               ) -> Iterator[dict[str, Any]]:
    """Run ``cell`` in a fresh worker process; yield its events (each with the worker's ``facts``).

    If the worker dies or passes a deadline before its record, it is stopped and this yields
    ``{"event": "failed", "cell_id", "reason", "facts"}`` naming the phase, the cause and the tail
    of its log. Always leaves no process behind.
    """
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        proc, events, log_path = _start(cell, options, name, Path(tmpdir))
        facts: dict[str, Any] | None = None
        recorded = False
        limit = options.startup_timeout_s
        deadline = time.monotonic() + limit
        phase = "start-up (import TensorFlow, set up devices)"

        def drain() -> Iterator[dict[str, Any]]:
            nonlocal facts, recorded, limit, deadline, phase
            for ev in events.read():
                if ev["event"] == "ready":
                    facts = ev["facts"]
                elif ev["event"] == "start":
                    limit = options.protocol.cell_timeout_s
                    deadline = time.monotonic() + limit
                    phase = f"cell {cell.id}"
                elif ev["event"] == "record":
                    recorded = True
                yield {**ev, "facts": facts}

        try:
            while proc.poll() is None and time.monotonic() <= deadline:
                yield from drain()
                time.sleep(POLL_S)
        finally:
            how = stop(proc)
        yield from drain()  # anything written just before the exit or the deadline
        if recorded:
            return
        if how == "already exited":
            cause = f"worker exited with {_signal_name(proc.returncode)} during {phase}"
        else:
            cause = (f"deadline passed: {phase} took over {limit:g} s; worker stopped with {how}")
        yield {"event": "failed", "cell_id": cell.id, "facts": facts,
               "reason": f"{cause}; worker log {log_path}: {_tail(log_path)}"}
