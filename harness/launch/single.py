"""A single-process cell: one fresh worker process, its events, its deadlines."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.launch.contract import Launch, WorkerOptions
from harness.launch.process import POLL_S, _signal_name, _start, _tail, stop
from harness.spec.cell import Cell


def run_worker(cell: Cell, options: WorkerOptions, name: str = "worker", launch: Launch = Launch(),
               joins: bool = False) -> Iterator[dict[str, Any]]:
    """Run ``cell`` in one fresh worker process; yield its events (each with the worker's ``facts``).

    Deadlines: start-up until the cell starts; with ``joins`` (one task of a cluster the scheduler
    started: ``--cluster tf_config|slurm``), the rendezvous until the worker has joined its cluster;
    then the cell. If the worker dies or passes a deadline before its record (a peer: before it
    finished), it is stopped and this yields ``{"event": "failed", "cell_id", "reason", "facts"}``
    naming the phase, the cause and the tail of its log. Always leaves no process behind.
    """
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        proc, events, log_path = _start(cell, options, name, Path(tmpdir), launch)
        facts: dict[str, Any] | None = None
        done = False
        limit = options.startup_timeout_s
        deadline = time.monotonic() + limit
        phase = "start-up (import TensorFlow, set up devices)"

        def enter(name: str, seconds: float) -> None:
            nonlocal phase, limit, deadline
            phase, limit, deadline = name, seconds, time.monotonic() + seconds

        def drain() -> Iterator[dict[str, Any]]:
            nonlocal facts, done
            for ev in events.read():
                if ev["event"] == "ready":
                    facts = ev["facts"]
                elif ev["event"] == "start":
                    enter("rendezvous (joining the cluster)", options.protocol.rendezvous_timeout_s
                          ) if joins else enter(f"cell {cell.id}", options.protocol.cell_timeout_s)
                elif ev["event"] == "joined" and joins:
                    enter(f"cell {cell.id}", options.protocol.cell_timeout_s)
                elif ev["event"] in ("record", "finished"):
                    done = True
                yield {**ev, "facts": facts}

        try:
            while proc.poll() is None and time.monotonic() <= deadline:
                yield from drain()
                time.sleep(POLL_S)
        finally:
            how = stop(proc)
        yield from drain()  # anything written just before the exit or the deadline
        if done:
            return
        if how == "already exited":
            cause = f"worker exited with {_signal_name(proc.returncode)} during {phase}"
        else:
            cause = (f"deadline passed: {phase} took over {limit:g} s; worker stopped with {how}")
        yield {"event": "failed", "cell_id": cell.id, "facts": facts,
               "reason": f"{cause}; worker log {log_path}: {_tail(log_path)}"}
