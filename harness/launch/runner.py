"""Running a selection of cells: each in its own fresh processes, one after the other, with the
progress bar, through one event loop (:func:`each_cell`) that three callers share:

- :func:`run_sweep` measures and stores every row as soon as it arrives (an interrupted run or a
  crashed worker loses no row already measured), unsupported cells as rows with their reason;
- :func:`follow_sweep` is a peer's part of a real-cluster run (the chief writes every row);
- :func:`verify_cells` trains each cell a fixed number of updates for ``verify``.

The parent process never imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__
from harness.analysis.verdicts import Outcome
from harness.launch.contract import Event, WorkerOptions
from harness.launch.local_cluster import run_cluster
from harness.launch.platform import git_sha
from harness.launch.progress import Progress
from harness.launch.single import run_worker
from harness.launch.tenants import run_tenants
from harness.results.rows import not_measured_row, with_efficiency
from harness.results.store import RunFiles
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from harness.spec.rules import unsupported_reason

Launcher = Callable[[Cell, WorkerOptions, str], Iterator[dict[str, Any]]]
"""Runs one cell's processes and yields their events: :func:`run_cell_processes` (local), or this
task's part on a real cluster (:func:`harness.launch.real_cluster.cluster_launcher`)."""


def run_cell_processes(cell: Cell, options: WorkerOptions, name: str) -> Iterator[dict[str, Any]]:
    """The events of one cell: one worker process, a local cluster for multi-worker cells, or
    several independent processes for co-tenant cells."""
    if cell.tenants > 1:
        return run_tenants(cell, options, name)
    return (run_cluster if cell.processes > 1 else run_worker)(cell, options, name)


@dataclass(frozen=True)
class CellEnd:
    """How one cell ended: ``event`` is record (its row), finished (a peer's part done) or failed
    (``reason``); ``facts``: the worker's fingerprint facts, when it got that far."""

    cell: Cell
    event: Event
    row: dict[str, Any] = field(default_factory=dict)
    windows: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    facts: dict[str, Any] | None = None


TERMINAL = (Event.RECORD, Event.FINISHED, Event.FAILED)


def each_cell(cells: Sequence[Cell], options: WorkerOptions, launcher: Launcher = run_cell_processes,
              progress: Progress | None = None) -> Iterator[CellEnd]:
    """Run every cell in its own fresh processes, in order; yield how each ended.

    Cells do not share a process: two MirroredStrategy objects in one process reuse collective
    instance keys, so the second cell's all-reduce aborts ("Shape mismatch in the collective
    instance 100"), even at the same replica count; a fresh process also leaves no trace of one
    cell (dtype policy, thread pools, allocator state) in the next. Cost: start-up_s per cell.
    """
    for index, cell in enumerate(cells):
        ended, facts = False, None
        for ev in launcher(cell, options, f"{index:05d}"):
            facts = ev.get("facts") or facts
            if ev["event"] == Event.START and progress is not None:
                progress.show(cell.id)
            elif ev["event"] in TERMINAL and not ended:
                ended = True  # handed on at once (stored before a Ctrl-C can come); the launcher
                yield _ended(cell, ev, facts, progress)  # goes on to stop its processes
        if not ended:
            yield _ended(cell, {"event": Event.FAILED, "reason": "its processes ended without a record"},
                         facts, progress)


def _ended(cell: Cell, ev: dict[str, Any], facts: dict[str, Any] | None,
           progress: Progress | None) -> CellEnd:
    row = ev.get("row") or {}
    end = CellEnd(cell, Event(ev["event"]), row, ev.get("windows") or [],
                  ev.get("reason") or row.get("reason", ""), facts)
    if progress is not None:
        progress.advance(cell.id, row.get("status") or str(end.event))
    return end


def plan(cells: Iterable[Cell], platform: Platform) -> list[tuple[Cell, str | None]]:
    """Each cell with the reason it is unsupported here (None when it will run)."""
    return [(c, unsupported_reason(c, platform)) for c in cells]


def new_run_id(now: dt.datetime) -> str:
    """``YYYYmmddTHHMMSSZ-xxxxxx``: sortable by start time, unique across machines."""
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@dataclass
class RunResult:
    """What a run produced: its rows in order, the folders written, and whether it was cut short."""

    run_id: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    interrupted: bool = False
    not_run: int = 0


def run_sweep(cells: list[Cell], protocol: Protocol, platform: Platform, out: Path,
              mnist_path: str | None = None, progress: Progress | None = None,
              launcher: Launcher = run_cell_processes) -> RunResult:
    """Measure every runnable cell, write every row (unsupported ones too) under ``out``."""
    now = dt.datetime.now(dt.timezone.utc)
    result = RunResult(new_run_id(now))
    files = RunFiles(out, now.strftime("%Y-%m-%d"), result.run_id)
    base = {"run_id": result.run_id, "suite_version": f"{__version__}+{git_sha() or 'unknown'}"}
    planned = plan(cells, platform)
    runnable = [c for c, why in planned if why is None]
    facts: dict[str, Any] | None = None

    def store(row: dict[str, Any], windows: list[dict[str, Any]]) -> None:
        stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        row = with_efficiency({**row, **base, "timestamp": stamp}, result.rows)
        windows = [{**w, "run_id": result.run_id} for w in windows]
        files.write(len(result.rows), row, windows)
        result.rows.append(row)
        result.windows.extend(windows)

    options = WorkerOptions(protocol, platform, out / "logs" / files.date / result.run_id, mnist_path)
    progress = progress or Progress(len(runnable))
    try:
        for end in each_cell(runnable, options, launcher, progress):
            facts = end.facts or facts
            if end.event == Event.RECORD:
                store(end.row, end.windows)
            else:
                store(not_measured_row(end.cell, protocol, "failed", end.reason, facts), [])
    except KeyboardInterrupt:
        result.interrupted = True
        result.not_run = len(runnable) - len(result.rows)
    finally:
        progress.close()
        for cell, why in planned:
            if why is not None:
                store(not_measured_row(cell, protocol, "unsupported", why, facts), [])
    if result.rows:
        result.paths = [files.folder("cells"), files.folder("windows")]
    return result


def follow_sweep(cells: list[Cell], platform: Platform, options: WorkerOptions,
                 launcher: Launcher) -> dict[str, int]:
    """A peer's part of a cluster run: take part in every runnable cell, in the chief's order,
    writing no results (the chief writes every row). Prints one line per cell; returns counts of
    ``finished`` and ``failed`` cells."""
    runnable = [c for c, why in plan(cells, platform) if why is None]
    counts = {"finished": 0, "failed": 0}
    for end in each_cell(runnable, options, launcher):
        if end.event == Event.FINISHED:
            counts["finished"] += 1
            print(f"finished {end.cell.id}", flush=True)
        else:  # a peer's record is its own failure
            counts["failed"] += 1
            print(f"failed {end.cell.id}: {end.reason}", flush=True)
    return counts


def verify_cells(cells: Sequence[Cell], updates: int, platform: Platform, options: WorkerOptions,
                 include_unsupported: bool = False) -> list[Outcome]:
    """Train every cell ``updates`` updates in its own worker, weights under
    ``options.log_dir / "weights"``; unsupported cells are skipped unless asked for. Co-tenancy does
    not change what a process computes, so a cell with tenants is trained once, alone."""
    cells = list({c.id: c for c in (dataclasses.replace(c, tenants=1) for c in cells)}.values())
    weights_dir = options.log_dir / "weights"
    weights_dir.mkdir(parents=True, exist_ok=True)
    options = dataclasses.replace(options, log_dir=options.log_dir / "logs", verify_updates=updates,
                                  weights_dir=str(weights_dir))
    todo = [c for c in cells if include_unsupported or unsupported_reason(c, platform) is None]
    outcomes: dict[str, Outcome] = {}
    with Progress(len(todo)) as progress:
        for end in each_cell(todo, options, progress=progress):
            r = end.row
            outcomes[end.cell.id] = (
                Outcome(end.cell, "failed", end.reason) if end.event != Event.RECORD
                else Outcome(end.cell, r["status"], r.get("reason") or "", r.get("final_loss"),
                             r.get("weights_digest") or "", r.get("weights_path") or ""))
    return [outcomes.get(c.id) or Outcome(c, "unsupported", unsupported_reason(c, platform) or "")
            for c in cells]
