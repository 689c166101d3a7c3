"""Test-only fault injection (``HARNESS_INJECT_FAULT``): a worker that dies, hangs, freezes or
straggles on cue; and a planted slowdown (``HARNESS_SLOW_WINDOWS``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from harness.spec.cell import Cell

BUSY_LOOP = "import os; os.sched_setaffinity(0, {0}); exec('while True: pass')"

SLOW_ENV = "HARNESS_SLOW_WINDOWS"
"""Test-only: a fraction F; every call of the custom loop's training function (each timed window
is made of them) is followed by F x its own duration of busy work (:func:`spin`), so the cell runs
1 / (1 + F) as fast (``ab``'s calibration plants a known slowdown this way)."""


def window_slowdown() -> float:
    """The planted slowdown fraction (0: none); a bad value is an error, never ignored."""
    text = os.environ.get(SLOW_ENV, "")
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 10:
        raise ValueError(f"{SLOW_ENV}={text!r}; expected a fraction >= 0, e.g. 0.05")
    return value


def spin(seconds: float) -> None:
    """Busy-wait ``seconds`` on this thread. A planted slowdown spins rather than sleeps, as a slower
    build computes longer: a sleeping process would lend its CPU to the other side."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _misbehave(kind: str) -> None:
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "stop":  # frozen, every thread included (TensorFlow's gRPC server too)
        os.kill(os.getpid(), signal.SIGSTOP)
    if kind == "busy":  # a straggler: this process shares core 0 with a busy loop (in its group)
        os.sched_setaffinity(0, {0})
        for thread in os.listdir("/proc/self/task"):  # TensorFlow's threads already running too
            os.sched_setaffinity(int(thread), {0})
        subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    if kind == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like a worker stuck in a collective
        while True:
            time.sleep(1)


def _inject(fault: str | None, cell: Cell, worker: int, point: str) -> None:
    """Test hook: ``KIND:<cell_id>`` misbehaves when the cell starts; ``KIND@N:<cell_id>`` makes
    task N misbehave once it has joined the cluster, ``KIND@N+S:<cell_id>`` S seconds after that;
    ``KIND@turn:<cell_id>`` misbehaves when granted its first timed turn (a member of a group).
    KIND: kill (SIGKILL), hang (ignore SIGTERM, block the main thread), stop (SIGSTOP), busy (pin
    the process to core 0 beside a busy loop: a straggler). Several faults, each its own cell's,
    are separated by ``;``."""
    for one in (fault or "").split(";"):
        kind, _, target = one.partition(":")
        kind, _, at = kind.partition("@")
        at, _, delay = at.partition("+")
        expected = ("joined", int(at)) if at.isdigit() else ((at, worker) if at else ("start", worker))
        if not one or target != cell.id or (point, worker) != expected:
            continue
        if delay:
            threading.Timer(float(delay), _misbehave, (kind,)).start()
        else:
            _misbehave(kind)
