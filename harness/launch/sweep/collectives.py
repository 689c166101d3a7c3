"""``--sweep collectives``: each topology (a cell) timed in ``protocol.processes`` fresh processes,
passes interleaved, rows under ``results/collectives``. Its processes start as a training cell's,
with ``WorkerOptions.collectives_max_bytes`` set: the worker times all-reduces."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path

from harness.contract.events import Event, Facts
from harness.contract.job import WorkerOptions
from harness.contract.records import CollectiveRow, Status
from harness.launch.cells.progress import Progress
from harness.launch.cells.runner import (
    CellEnd,
    Launcher,
    RunResult,
    each_cell,
    new_run_id,
    plan,
    run_cell_processes,
    run_date,
    suite_version,
)
from harness.launch.system.platform import HostMachine, this_machine
from harness.results.collectives import TopologyReport, not_measured, topology_label, topology_rows
from harness.results.store import RunFiles
from harness.spec.cell import Cell
from harness.spec.collectives import DEFAULT_MAX_BYTES
from harness.spec.protocol import Platform, Protocol
from harness.spec.schedule import pass_order


def run_collectives(
    cells: Sequence[Cell],
    protocol: Protocol,
    platform: Platform,
    out: Path,
    max_bytes: int = DEFAULT_MAX_BYTES,
    launcher: Launcher = run_cell_processes,
    progress: Progress | None = None,
    run_id: str | None = None,
    machine: HostMachine | None = None,
) -> RunResult:
    """Time every runnable topology's payloads in interleaved passes (one whose process fails is not
    run again); write every row under ``out/collectives``. ``run_id``: default a new one;
    ``machine``: what the rows name (default: this host)."""
    result = RunResult(run_id or new_run_id(dt.datetime.now(dt.UTC)))
    files = RunFiles(out, run_date(result.run_id), result.run_id)
    options = WorkerOptions.of(
        protocol, platform, out / "logs" / files.date / result.run_id, collectives_max_bytes=max_bytes
    )
    planned = plan(cells, platform)
    runnable = [c for c, why in planned if why is None]
    reports: dict[str, list[TopologyReport]] = {c.id: [] for c in runnable}
    facts: dict[str, Facts | None] = {}
    progress = progress or Progress(len(runnable) * protocol.processes)
    t0 = time.monotonic()
    try:
        for k in range(protocol.processes):
            todo = [
                c
                for c in pass_order(runnable, k, protocol.seed)
                if all(r.status == Status.OK for r in reports[c.id])
            ]
            for end in each_cell(todo, options, launcher, progress, prefix=f"p{k}-", label=topology_label):
                reports[end.cell.id].append(_timed(end))
                facts[end.cell.id] = end.facts or facts.get(end.cell.id)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        progress.close()
        _write(result, files, planned, reports, facts, machine or this_machine())
    result.not_run = sum(1 for c in runnable if not reports[c.id])
    spent_s = time.monotonic() - t0
    print(
        f"time: {spent_s:.0f} s for {len(runnable)} topologies x {protocol.processes} processes", flush=True
    )
    return result


def _timed(end: CellEnd) -> TopologyReport:
    """What one process of a topology reported (a process that ended without a row: failed)."""
    row = end.row
    if end.event != Event.RECORD or row is None or row.status is None:
        return TopologyReport(Status.FAILED, end.reason)
    op = row.ran.effective_cross_device_ops
    return TopologyReport(row.status, row.reason, op, tuple(end.report.get("collectives", ())))


def _write(
    result: RunResult,
    files: RunFiles,
    planned: Sequence[tuple[Cell, str | None]],
    reports: dict[str, list[TopologyReport]],
    facts: dict[str, Facts | None],
    machine: HostMachine,
) -> None:
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    base: CollectiveRow = {
        "run_id": result.run_id,
        "timestamp": stamp,
        "suite_version": suite_version(),
        "machine": machine.name,
        "machine_id": machine.facts.short_id,
    }
    known = next((f for f in facts.values() if f), None)
    for cell, why in planned:
        if why is not None:
            rows = [not_measured(cell, known, Status.UNSUPPORTED, why)]
        elif reports[cell.id]:
            rows = topology_rows(cell, reports[cell.id], facts.get(cell.id))
        else:
            continue
        for row in rows:
            row = {**base, **row}
            files.write_collective(len(result.collectives), row)
            result.collectives.append(row)
    if result.collectives:
        result.paths = [files.folder("collectives")]
