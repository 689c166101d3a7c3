"""Running a selection of cells, each in its own fresh processes, one after the other, with the
progress bar, through one event loop (:func:`each_cell`); :class:`RunState`, a run's rows, each
process's windows stored as they arrive (an interrupted run loses nothing measured);
:func:`verify_cells` trains each for ``verify``. The parent process never imports TensorFlow."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa

from harness import __version__
from harness.analysis.run.verdicts import Outcome, numerics_of
from harness.contract.columns import unflatten
from harness.contract.events import Event, EventLine, Facts, ProcessRow
from harness.contract.job import WorkerOptions
from harness.contract.records import Breakdown, CellRow, CollectiveRow, RatioRow, RunInfo, Status, WindowRow
from harness.formulas import stats
from harness.launch.cells.cluster import ClusterPlace
from harness.launch.cells.foreign import run_with_tenant
from harness.launch.cells.local_cluster import run_cluster
from harness.launch.cells.peak import PeakLog, run_dtypes
from harness.launch.cells.progress import Progress
from harness.launch.cells.single import run_worker
from harness.launch.cells.tenants import run_tenants
from harness.launch.system.platform import HostMachine, git_sha, this_machine
from harness.results.aggregate import ProcessResult, aggregate, not_measured_row
from harness.results.history import earlier_figures
from harness.results.ratios import Evidence, ratio_rows, with_turn_ratios
from harness.results.references import Peak, with_history, with_peak, with_ratios
from harness.results.store import RunFiles, read_cells
from harness.spec.cell import Cell
from harness.spec.frameworks import NONE
from harness.spec.protocol import Platform, Protocol
from harness.spec.rules import unsupported_reason

Launcher = Callable[[Cell, WorkerOptions, str], Iterator[EventLine]]
"""Runs one cell's processes and yields their events: :func:`run_cell_processes` (local), or this
task's part on a real cluster (:func:`harness.launch.nodes.real_cluster.chief_launcher`)."""


def run_cell_processes(cell: Cell, options: WorkerOptions, name: str) -> Iterator[EventLine]:
    """The events of one cell: one worker process, a local cluster for multi-worker cells,
    several independent processes for co-tenant cells, or a worker beside a co-tenant from another
    framework."""
    if cell.tenant_framework != NONE:
        return run_with_tenant(cell, options, name)
    if cell.tenants > 1:
        return run_tenants(cell, options, name)
    return (run_cluster if cell.processes > 1 else run_worker)(cell, options, name)


@dataclass(frozen=True)
class CellEnd:
    """How one cell ended: ``event`` is record (its row), finished (a peer's part done) or failed
    (``reason``); ``facts``: the worker's fingerprint facts, when it got that far; ``wall_s``:
    seconds from launch to the end; ``launch_s``: from launch to the cell's start."""

    cell: Cell
    event: Event
    row: CellRow | None = None
    """The process's row (a record event's; None for the other events)."""
    report: ProcessRow = field(default_factory=lambda: ProcessRow())
    windows: list[WindowRow] = field(default_factory=list)
    reason: str = ""
    facts: Facts | None = None
    wall_s: float = 0.0
    launch_s: float = 0.0

    def measured(self, protocol: Protocol, facts: Facts | None) -> CellRow:
        """The record's row, or a failed row saying why there is none (``facts``: the worker's)."""
        if self.event == Event.RECORD and self.row is not None:
            return self.row
        return not_measured_row(self.cell, protocol, Status.FAILED, self.reason, facts)


TERMINAL = (Event.RECORD, Event.FINISHED, Event.FAILED)


def each_cell(
    cells: Sequence[Cell],
    options: WorkerOptions,
    launcher: Launcher = run_cell_processes,
    progress: Progress | None = None,
    prefix: str = "",
    label: Callable[[Cell], str] = lambda c: c.id,
) -> Iterator[CellEnd]:
    """Run every cell in its own fresh processes, in order; yield how each ended. Not one process: two
    MirroredStrategy objects in one reuse collective instance keys (the second cell's all-reduce
    aborts: "Shape mismatch in the collective instance 100"), and a fresh process carries nothing of
    one cell (dtype policy, thread pools, allocator) into the next. Cost: start-up_s per cell."""
    for index, cell in enumerate(cells):
        ended, facts = False, None
        t0 = time.monotonic()
        started = t0
        for ev in launcher(cell, options, f"{prefix}{index:05d}"):
            facts = ev.get("facts") or facts
            if ev["event"] == Event.START:
                started = time.monotonic()
                if progress is not None:
                    progress.show(label(cell))
            elif ev["event"] in TERMINAL and not ended:
                # handed on at once (stored before a Ctrl-C can come); the launcher goes on to stop its processes
                ended = True
                yield _ended(cell, ev, facts, progress, t0, started, label)
        if not ended:
            failed: EventLine = {"event": Event.FAILED, "reason": "its processes ended without a record"}
            yield _ended(cell, failed, facts, progress, t0, started, label)


def _ended(
    cell: Cell,
    ev: EventLine,
    facts: Facts | None,
    progress: Progress | None,
    t0: float,
    started: float,
    label: Callable[[Cell], str],
) -> CellEnd:
    """The end of ``cell`` that ``ev`` says, launched at ``t0`` and started at ``started`` (monotonic s)."""
    columns = ev.get("row")
    row = None if columns is None else unflatten(CellRow, columns)
    end = CellEnd(
        cell,
        Event(ev["event"]),
        row,
        ev.get("report") or {},
        ev.get("windows") or [],
        ev.get("reason") or (row.reason if row else ""),
        facts,
        time.monotonic() - t0,
        started - t0,
    )
    if progress is not None:
        progress.advance(label(cell), (row.status if row else None) or str(end.event))
    return end


def plan(cells: Iterable[Cell], platform: Platform) -> list[tuple[Cell, str | None]]:
    """Each cell with the reason it is unsupported here (None when it will run)."""
    return [(c, unsupported_reason(c, platform)) for c in cells]


def new_run_id(now: dt.datetime) -> str:
    """``YYYYmmddTHHMMSSZ-xxxxxx``: sortable by start time, unique across machines."""
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def run_date(run_id: str) -> str:
    """``YYYY-MM-DD``, the day a run started (its files' folder), from its id."""
    return f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}"


def suite_version() -> str:
    """``<version>+<git commit>``: the suite that measures."""
    return f"{__version__}+{git_sha() or 'unknown'}"


@dataclass
class RunResult:
    """What a run produced: its rows in order, the folders written, whether it was cut short, and
    where the time went (:class:`TimeSpent`)."""

    run_id: str
    rows: list[CellRow] = field(default_factory=list)
    windows: list[WindowRow] = field(default_factory=list)
    collectives: list[CollectiveRow] = field(default_factory=list)
    """``--sweep collectives``: its rows (``rows`` stays empty)."""
    paths: list[Path] = field(default_factory=list)
    interrupted: bool = False
    stopped: str = ""
    """Why the run stopped before its end on its own (a busy machine), "" otherwise."""
    not_run: int = 0
    time: TimeSpent | None = None
    ratios: list[RatioRow] = field(default_factory=list)
    """The comparisons measured in turns (the ratios table)."""
    cost: str = ""
    """A run in turns: where its wall time went (its costs row, in words)."""
    unreached: list[CellRow] = field(default_factory=list)
    """A stopped run's cells it never reached, as rows that are not written (a resumed run
    measures them): what names them in words where the ratios mention them."""


@dataclass
class TimeSpent:
    """Seconds of a run by phase, summed over its cell processes (parent clock for ``wall`` and
    ``launch``; worker clock for build, compile and windows) and its peak processes."""

    processes: int = 0
    wall: float = 0.0
    launch: float = 0.0
    build: float = 0.0
    compile: float = 0.0
    windows: float = 0.0
    peak: float = 0.0
    peak_processes: int = 0

    def add(self, result: ProcessResult) -> None:
        row = result.row
        self.processes += 1
        self.wall += result.wall_s
        self.launch += result.launch_s
        self.build += row.timing.startup_s or 0.0
        self.compile += row.timing.compile_s or 0.0
        self.windows += sum(w["window_s"] for w in result.windows if w.get("worker") == 0)

    def text(self) -> str:
        other = self.wall - self.launch - self.build - self.compile - self.windows
        return (
            f"time: {self.wall:.0f} s in {self.processes} cell processes (launch and import "
            f"{self.launch:.0f} s, build {self.build:.0f} s, first call {self.compile:.0f} s, timed "
            f"windows {self.windows:.0f} s, calibration, warm-up, checks and exit {other:.0f} s); "
            f"peak {self.peak:.0f} s in {self.peak_processes} processes"
        )


def earlier_cells(out: Path) -> pd.DataFrame | None:
    """The rows of the runs already under ``out`` (the history a row's CI is widened with), or
    None when there are none or they cannot be read (a warning; the CIs then cover this run's
    processes only)."""
    if not (out / "cells").is_dir():
        return None
    try:
        return read_cells(out)
    except (pa.ArrowException, OSError, ValueError) as e:  # an old corrupt file must not stop a run
        print(
            f"warning: cannot read the earlier results under {out}: {e}; this run's CIs cover "
            "its own processes only",
            file=sys.stderr,
            flush=True,
        )
        return None


class RunState:
    """The state of one run: its files, every process result per cell, the peak log, and the
    earlier runs' rows under the same folder."""

    def __init__(
        self,
        cells: list[Cell],
        protocol: Protocol,
        platform: Platform,
        out: Path,
        peaks: PeakLog | None,
        run_id: str | None = None,
        resumes: int = 0,
        machine: HostMachine | None = None,
    ) -> None:
        """``run_id``: the run's id (default: a new one; a resumed run keeps its own: its files go
        where the first session's went); ``resumes``: sessions that took the run over before;
        ``machine``: the name and facts every row carries (default: this host's, its default name)."""
        run_id = run_id or new_run_id(dt.datetime.now(dt.UTC))
        self.result = RunResult(run_id, time=TimeSpent())
        self.files = RunFiles(out, run_date(run_id), run_id)
        run = RunInfo(run_id=run_id, suite_version=suite_version(), resumes=resumes)
        self.run = (machine or this_machine()).stamp(run)
        """The columns of the run on every row it writes (cells, ratios, costs): its id, suite,
        resumes, machine and protocol version; the timestamp is set as the rows are written."""
        self.protocol, self.platform = protocol, platform
        self.planned = plan(cells, platform)
        self.runnable = [c for c, why in self.planned if why is None]
        self.evidence: dict[str, list[ProcessResult]] = {c.id: [] for c in self.runnable}
        if peaks is None:
            peaks = PeakLog(platform, run_dtypes(self.runnable) if protocol.peak else ())
        self.peaks = peaks
        self.facts: Facts | None = None
        self.breakdowns: dict[str, Breakdown] = {}
        """By cell id: the step breakdown a process of its own measured after the turns
        (:mod:`harness.launch.instances.breakdowns`), or why it was not."""
        self._window_files = itertools.count()
        self.place = ClusterPlace()
        """Where the rows were measured (nodes, tasks' hosts, link): every row carries it."""
        self.unreached = f"the budget ({protocol.budget_min:g} min) was spent before its first process"
        """Why a runnable cell with no process has none."""
        earlier = earlier_cells(out)
        # a resumed run's own rows (written by a session that was interrupted) are not its history
        self.earlier = None if earlier is None else earlier[earlier["run_id"] != run_id]

    def record(self, end: CellEnd, pass_index: int) -> None:
        """Keep one process's result; its windows are written at once."""
        self.facts = end.facts or self.facts
        row = end.measured(self.protocol, self.facts)
        windows: list[WindowRow] = [
            {**w, "run_id": self.result.run_id, "pass": pass_index} for w in end.windows
        ]
        self.files.write_windows(next(self._window_files), windows)
        self.result.windows.extend(windows)
        result = ProcessResult(row, windows, pass_index, end.wall_s, end.launch_s)
        self.evidence[end.cell.id].append(result)
        assert self.result.time is not None
        self.result.time.add(result)

    def ok_so_far(self, cell: Cell) -> bool:
        return all(r.row.status == Status.OK for r in self.evidence[cell.id])

    def measure_peak(self, env: Mapping[str, str] | None = None) -> None:
        """One peak process (``env``: the workers' added variables, so that it shares their
        fork server)."""
        assert self.result.time is not None
        if not self.peaks.dtypes:
            return
        self.peaks.measure(env)
        self.result.time.peak = self.peaks.seconds
        self.result.time.peak_processes += 1

    def _earlier(self, row: CellRow) -> list[float]:
        """Earlier runs' figures of the row's cell on its fingerprint (the history of its CI)."""
        if self.earlier is None:
            return []
        return earlier_figures(
            self.earlier, row.cell.cell_id, row.machine.fingerprint if row.machine else None
        )

    def write_rows(self, measured: Sequence[Evidence] = ()) -> None:
        """Every measured cell's row (with the peak and the ratios), then the unsupported ones;
        ``measured``: the comparisons measured in turns (the ratios table; their scaling
        efficiency and co-tenancy ratio replace those of separately measured processes)."""
        peaks = {d: Peak(d, stats.figure(v)) for d, v in self.peaks.samples.items()}
        run = replace(self.run, timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        rows = [
            with_peak(
                replace(aggregate(c, self.protocol, done, self.breakdowns.get(c.id)), run=run), peaks, c
            )
            for c in self.runnable
            if (done := self.evidence[c.id])
        ]
        rows = [with_ratios(r, rows) for r in rows]
        fingerprint = (self.facts or {}).get("fingerprint")
        pr = self.protocol
        ratios = ratio_rows(measured, run, fingerprint, pr.blocks, pr.turn_s, pr.min_effect)
        rows = [with_turn_ratios(r, ratios) for r in rows]
        rows = [with_history(r, self._earlier(r)) for r in rows]

        def unmeasured(cell: Cell, status: Status, why: str) -> CellRow:
            return replace(not_measured_row(cell, self.protocol, status, why, self.facts), run=run)

        rows += [unmeasured(c, Status.UNSUPPORTED, why) for c, why in self.planned if why is not None]
        todo = [c for c in self.runnable if not self.evidence[c.id]]
        unreached = [unmeasured(c, Status.NOT_MEASURED, self.unreached) for c in todo]
        if self.result.interrupted:  # a stopped run resumes: their rows are not written
            self.result.unreached, unreached = unreached, []
        rows += unreached
        where = self.place
        for row in rows:
            ran = replace(row.ran, nodes=where.nodes, placement=where.placement, link_gbps=where.link_gbps)
            row = replace(row, ran=ran)
            self.files.write_row(len(self.result.rows), row)
            self.result.rows.append(row)
        self.result.not_run = len(todo)
        self.result.ratios = ratios
        if self.result.rows:
            self.result.paths = [self.files.folder("cells"), self.files.folder("windows")]
        if self.files.write_ratios(ratios) is not None:
            self.result.paths.append(self.files.folder("ratios"))


def verify_cells(
    cells: Sequence[Cell],
    updates: int,
    platform: Platform,
    options: WorkerOptions,
    include_unsupported: bool = False,
) -> list[Outcome]:
    """Train every cell ``updates`` updates in its own worker, weights under
    ``options.log_dir / "weights"``, with op determinism on and TensorFloat-32 off
    (``WorkerOptions.deterministic``); unsupported cells are skipped unless asked for. Co-tenancy
    does not change what a process computes, so a cell with tenants is trained once, alone."""
    cells = list({c.id: c for c in (dataclasses.replace(c, tenants=1) for c in cells)}.values())
    weights_dir = options.log_dir / "weights"
    weights_dir.mkdir(parents=True, exist_ok=True)
    options = dataclasses.replace(
        options,
        log_dir=options.log_dir / "logs",
        verify_updates=updates,
        weights_dir=str(weights_dir),
        deterministic=True,
    )
    todo = [c for c in cells if include_unsupported or unsupported_reason(c, platform) is None]
    outcomes: dict[str, Outcome] = {}
    with Progress(len(todo)) as progress:
        for end in each_cell(todo, options, progress=progress):
            r = end.row
            outcomes[end.cell.id] = (
                Outcome(end.cell, Status.FAILED, end.reason)
                if end.event != Event.RECORD or r is None
                else Outcome(
                    end.cell,
                    r.status or Status.FAILED,
                    r.reason,
                    r.checks.final_loss,
                    r.checks.weights_digest or "",
                    end.report.get("weights_path") or "",
                    numerics_of(r, end.report),
                )
            )
    return [
        outcomes.get(c.id) or Outcome(c, Status.UNSUPPORTED, unsupported_reason(c, platform) or "")
        for c in cells
    ]
