"""One run of a sweep, as a chain: expand -> split unsupported -> one worker per cell -> store -> summary.

The parent process never imports TensorFlow. Each row is stored as soon as it arrives, so an
interrupted run (Ctrl-C) or a crashed worker loses no row already measured.
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
from harness.launch.contract import WorkerOptions
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


def run_cells(cells: Sequence[Cell], updates: int, protocol: Protocol, platform: Platform,
              work_dir: Path, include_unsupported: bool = False,
              mnist_path: str | None = None) -> list[Outcome]:
    """Train every cell in its own worker, weights and logs under ``work_dir``; unsupported cells
    are skipped unless asked for. Co-tenancy does not change what a process computes, so a cell
    with tenants is trained once, alone (tenants 1)."""
    cells = list({c.id: c for c in (dataclasses.replace(c, tenants=1) for c in cells)}.values())
    weights_dir = work_dir / "weights"
    weights_dir.mkdir(parents=True, exist_ok=True)
    options = WorkerOptions(protocol, platform, work_dir / "logs", mnist_path,
                            verify_updates=updates, weights_dir=str(weights_dir))
    todo = [c for c in cells if include_unsupported or unsupported_reason(c, platform) is None]
    progress = Progress(len(todo))
    outcomes: dict[str, Outcome] = {}
    for index, cell in enumerate(todo):
        for ev in run_cell_processes(cell, options, name=f"{index:05d}"):
            if ev["event"] == "start":
                progress.show(cell.id)
            elif ev["event"] == "record":
                r = ev["row"]
                outcomes[cell.id] = Outcome(cell, r["status"], r.get("reason") or "",
                                            r.get("final_loss"), r.get("weights_digest") or "",
                                            r.get("weights_path") or "")
                progress.advance(cell.id)
            elif ev["event"] == "failed":
                outcomes[cell.id] = Outcome(cell, "failed", ev["reason"])
                progress.advance(cell.id)
    progress.close()
    return [outcomes.get(c.id) or Outcome(c, "unsupported", unsupported_reason(c, platform) or "")
            for c in cells]


def run_cell_processes(cell: Cell, options: WorkerOptions, name: str) -> Iterator[dict[str, Any]]:
    """The events of one cell: one worker process, a local cluster for multi-worker cells, or
    several independent processes for co-tenant cells."""
    if cell.tenants > 1:
        return run_tenants(cell, options, name)
    return (run_cluster if cell.processes > 1 else run_worker)(cell, options, name)


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


def plan(cells: Iterable[Cell], platform: Platform) -> list[tuple[Cell, str | None]]:
    """Each cell with the reason it is unsupported here (None when it will run)."""
    return [(c, unsupported_reason(c, platform)) for c in cells]


Launcher = Callable[[Cell, WorkerOptions, str], Iterator[dict[str, Any]]]
"""Runs one cell's processes and yields their events: :func:`harness.launch.run_cell_processes`
(local), or this task's part on a real cluster."""


def _events(cells: list[Cell], options: WorkerOptions, launcher: Launcher = run_cell_processes
            ) -> Iterator[dict[str, Any]]:
    """Every worker event, one fresh worker process per cell.

    Cells do not share a process: two MirroredStrategy objects in one process reuse collective
    instance keys, so the second cell's all-reduce aborts ("Shape mismatch in the collective
    instance 100"), even at the same replica count; a fresh process also leaves no trace of one
    cell (dtype policy, thread pools, allocator state) in the next. Cost: start-up_s per cell.
    """
    for index, cell in enumerate(cells):
        yield from launcher(cell, options, f"{index:05d}")


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
    by_id = {c.id: c for c in runnable}
    progress = progress or Progress(len(runnable))
    facts: dict[str, Any] | None = None

    def store(row: dict[str, Any], windows: list[dict[str, Any]]) -> None:
        stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        row = with_efficiency({**row, **base, "timestamp": stamp}, result.rows)
        windows = [{**w, "run_id": result.run_id} for w in windows]
        files.write(len(result.rows), row, windows)
        result.rows.append(row)
        result.windows.extend(windows)

    options = WorkerOptions(protocol, platform, out / "logs" / files.date / result.run_id, mnist_path)
    try:
        for ev in _events(runnable, options, launcher):
            facts = ev.get("facts") or facts
            if ev["event"] == "start":
                progress.show(ev["cell_id"])
            elif ev["event"] == "record":
                store(ev["row"], ev["windows"])
                progress.advance(ev["row"]["cell_id"])
            elif ev["event"] == "failed":
                cell = by_id[ev["cell_id"]]
                store(not_measured_row(cell, protocol, "failed", ev["reason"], facts), [])
                progress.advance(cell.id)
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


def follow_sweep(cells: list[Cell], protocol: Protocol, platform: Platform, log_dir: Path,
                 launcher: Launcher, mnist_path: str | None = None) -> dict[str, int]:
    """A peer's part of a cluster run: take part in every runnable cell, in the chief's order,
    writing no results (the chief writes every row). Prints one line per cell; returns counts of
    ``finished`` and ``failed`` cells."""
    runnable = [c for c, why in plan(cells, platform) if why is None]
    options = WorkerOptions(protocol, platform, log_dir, mnist_path)
    counts = {"finished": 0, "failed": 0}
    for ev in _events(runnable, options, launcher):
        if ev["event"] == "finished":
            counts["finished"] += 1
            print(f"finished {ev.get('cell_id') or ''}".rstrip(), flush=True)
        elif ev["event"] in ("failed", "record"):  # a peer's record is its own failure
            counts["failed"] += 1
            reason = ev.get("reason") or ev.get("row", {}).get("reason", "")
            print(f"failed {ev.get('cell_id') or ev.get('row', {}).get('cell_id')}: {reason}",
                  flush=True)
    return counts
