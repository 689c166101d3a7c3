"""One run of a sweep, as a chain: expand -> split unsupported -> one worker per cell -> store -> summary.

The parent process never imports TensorFlow. Each row is stored as soon as it arrives, so an
interrupted run (Ctrl-C) or a crashed worker loses no row already measured.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__, metrics
from harness.launch import WorkerOptions, git_sha, run_cell_processes
from harness.progress import Progress
from harness.records import find_alone, find_baseline, not_measured_row
from harness.spec import Cell, Platform, Protocol, unsupported_reason
from harness.store import RunFiles


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


def with_efficiency(row: dict[str, Any], earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """The row plus scaling_efficiency and baseline_cell_id against the run's rows so far, and for
    co-tenant cells cotenancy_ratio against the same cell alone."""
    if row.get("status") != "ok":
        return row
    if row.get("tenants", 1) > 1:
        alone = find_alone(row, earlier)
        if alone is not None:
            row = {**row, "cotenancy_ratio": row["examples_per_sec"] / alone["examples_per_sec"]}
    base = row if row["replicas"] * row["workers"] == 1 else find_baseline(row, earlier)
    if base is None:
        return {**row, "baseline_cell_id": ""}
    eff = metrics.scaling_efficiency(row["examples_per_sec"], row["replicas"] * row["workers"],
                                     base["examples_per_sec"])
    return {**row, "scaling_efficiency": eff, "baseline_cell_id": base["cell_id"]}


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
