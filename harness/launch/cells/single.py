"""A single-process cell, or this task's process of a cell on a real cluster: one fresh worker
process, its events, its phases and deadlines."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.contract.events import Event, EventLine, Facts
from harness.contract.job import Job, Launch, WorkerOptions, injected_fault
from harness.launch.system.process import KILL_GRACE_S, POLL_S, Deadline, Phase, start_worker
from harness.spec.cell import Cell

ABORT_GRACE_S = 1.0
"""Seconds an aborted worker (a task of its cluster lost) gets between SIGTERM and SIGKILL: one stuck
in a collective with a dead peer ignores SIGTERM, and its row must not wait."""


def run_worker(
    cell: Cell,
    options: WorkerOptions,
    name: str = "worker",
    launch: Launch = Launch(),
    joins: bool = False,
    abort: Callable[[], str | None] = lambda: None,
) -> Iterator[EventLine]:
    """Run ``cell`` in one fresh worker process; yield its events (each with the worker's ``facts``).
    Deadlines: start-up, the rendezvous with ``joins`` (a task of a real cluster), then the cell. A
    worker that dies or passes a deadline before its record (a peer: before it finished), or whose
    ``abort`` (asked every poll) gives a reason, is stopped and a ``failed`` event names the phase,
    the cause and its log's tail. Leaves no process behind."""
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        proc = start_worker(
            Job(cell, options, launch, injected_fault()),
            Path(tmpdir),
            name,
            Deadline(Phase.STARTUP, options.startup_timeout_s),
        )
        facts: Facts | None = None
        done = False

        def drain() -> Iterator[EventLine]:
            nonlocal facts, done
            for ev in proc.events():
                kind = ev["event"]
                if kind == Event.READY:
                    facts = ev["facts"]
                elif kind == Event.START and joins:
                    proc.deadline.enter(Phase.JOIN, options.settings.rendezvous_timeout_s)
                elif kind == Event.START or (kind == Event.JOINED and joins):
                    proc.deadline.enter(Phase.CELL, options.cell_timeout_s, cell.id)
                elif kind in (Event.RECORD, Event.FINISHED):
                    done = True
                yield {**ev, "facts": facts}

        aborted: str | None = None
        try:
            while proc.running and not proc.deadline.overdue:
                yield from drain()
                aborted = None if done else abort()
                if aborted:
                    break
                time.sleep(POLL_S)
        finally:
            how = proc.stop(ABORT_GRACE_S if aborted else KILL_GRACE_S)
        yield from drain()  # anything written just before the exit or the deadline
        if not done:
            reason = aborted or proc.failure(how)
            yield {"event": Event.FAILED, "cell_id": cell.id, "facts": facts, "reason": reason}
