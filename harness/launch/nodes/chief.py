"""The chief of a real cluster: it holds the run lease (:mod:`harness.launch.nodes.lease`) and drives
every other task through it: joins, link timing, passes over the runnable cells, each process
journaled at once, a lost task, ``finished`` (docs/explanation/multi-worker.md)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import Status
from harness.formulas.budget import Budget
from harness.launch.cells.cluster import ClusterConfig, ClusterPlace
from harness.launch.cells.progress import Progress
from harness.launch.cells.runner import CellEnd, Launcher, RunResult, RunState, each_cell, run_date
from harness.launch.instances.resume import decode_end, encode_end, peak_entry, restore_peak
from harness.launch.nodes.lease import RunLease, lease_address, task_host, task_names
from harness.launch.nodes.real_cluster import chief_launcher
from harness.launch.system.platform import HostMachine
from harness.results import journal
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from harness.spec.schedule import pass_order

PROCESS = "process"
"""Journal entry of one process of a cell: ``{"kind": "process", "pass": k, "end": ...}``."""
PEAK = "peak"


@dataclass(frozen=True)
class ChiefRun:
    """What the chief measures, the machine its rows name, the MNIST file, its run id; resumed:
    ``replay`` (journaled process ends), ``elapsed_s`` (earlier sessions', s)."""

    cells: tuple[Cell, ...]
    protocol: Protocol
    platform: Platform
    machine: HostMachine | None
    mnist_path: str | None
    run_id: str
    replay: tuple[tuple[int, CellEnd], ...] = ()
    peak: dict[str, object] | None = None
    elapsed_s: float = 0.0
    resumes: int = 0


PROBES = 3
"""Transfers timed per node: a link's Gbit/s is the fastest of them (other load only slows one down)."""


def place(config: ClusterConfig, lease: RunLease) -> ClusterPlace:
    """The nodes the cluster spans and the slowest link from the chief to another node, each the
    fastest of :data:`PROBES` (None on one node, or where a node answered none)."""
    chief_host = lease_address(config)[0]
    one_per_node: dict[str, str] = {}
    for name in task_names(config):
        one_per_node.setdefault(task_host(config, name), name)
    one_per_node.pop(chief_host, None)
    speeds = []
    for name in one_per_node.values():
        timed = [g for g in (lease.probe(name) for _ in range(PROBES)) if g is not None]
        speeds.append(max(timed) if timed else None)
    link = None if not speeds or None in speeds else min(s for s in speeds if s is not None)
    return ClusterPlace(config.nodes, config.placement, link)


def measure(
    run: ChiefRun,
    out: Path,
    config: ClusterConfig,
    lease: RunLease,
    log: journal.Journal,
    stop: Callable[[], str | None],
    started: float | None = None,
) -> RunResult:
    """The passes, every row written under ``out``; ``stop``: why to start no more cells (a task
    lost); ``started``: this session's start (monotonic s; the budget's clock)."""
    pr = run.protocol
    state = RunState(list(run.cells), pr, run.platform, out, None, run.run_id, run.resumes, run.machine)
    state.place = place(config, lease) if stop() is None else ClusterPlace(config.nodes, config.placement)
    if run.peak is not None:
        restore_peak(state.peaks, run.peak)
    if run.replay:  # every window of the run is in its journal
        shutil.rmtree(state.files.folder("windows"), ignore_errors=True)
    for k, end in run.replay:  # the journaled processes kept again (their windows written anew, in order)
        state.record(end, k)
    done = {(k, end.cell.id) for k, end in run.replay}
    t0 = (started if started is not None else time.monotonic()) - run.elapsed_s  # the budget's clock
    order = [(k, c) for k in range(pr.processes) for c in pass_order(state.runnable, k, pr.seed)]
    todo = [(k, i, c) for i, (k, c) in enumerate(order) if (k, c.id) not in done]
    progress = Progress(len(todo))
    try:
        _passes(state, todo, run, chief_launcher(config, lease), log, stop, t0, progress)
        why = stop()
        if why is not None and not state.result.stopped:
            state.result.stopped, state.unreached = why, f"not started: {why}"
        if not state.result.stopped:
            log.append({"kind": "end", "elapsed_s": time.monotonic() - t0})
    except KeyboardInterrupt:
        state.result.interrupted = True
    finally:
        progress.close()
        state.write_rows()
    return state.result


def _passes(
    state: RunState,
    todo: Sequence[tuple[int, int, Cell]],
    run: ChiefRun,
    launcher: Launcher,
    log: journal.Journal,
    stop: Callable[[], str | None],
    t0: float,
    progress: Progress,
) -> None:
    """Each (pass, position, cell) of ``todo``, peaks around the passes, until ``stop`` gives a reason
    (the next cell fails with it, where no process did) or the run so far (since ``t0``, monotonic s)
    and its longest cell would not fit the budget."""
    pr = run.protocol
    options = WorkerOptions.of(
        pr, run.platform, state.files.root / "logs" / run_date(run.run_id) / run.run_id, run.mnist_path
    )
    if todo and stop() is None and not run.replay:
        _peak(state, log)
    longest_s = 0.0
    for index, (k, position, cell) in enumerate(todo):
        if index and todo[index - 1][0] != k:  # between passes
            _peak(state, log)
        why = stop()
        if why is not None:
            if not any(r.row.reason.startswith(why) for e in state.evidence.values() for r in e):
                _journaled(state, CellEnd(cell, Event.FAILED, reason=why), k, log, t0)
            state.result.stopped, state.unreached = why, f"not started: {why}"
            return
        if not Budget(pr.budget_s, time.monotonic() - t0).fits(longest_s):
            return
        for end in each_cell([cell], options, launcher, progress, prefix=f"p{k}-{position:05d}-"):
            _journaled(state, end, k, log, t0)
            longest_s = max(longest_s, end.wall_s)
    if todo and stop() is None:
        _peak(state, log)


def _journaled(state: RunState, end: CellEnd, k: int, log: journal.Journal, t0: float) -> None:
    """One process's end kept (pass ``k``) and journaled with the budget's seconds spent (since ``t0``)."""
    state.record(end, k)
    log.append({"kind": PROCESS, "pass": k, "end": encode_end(end), "elapsed_s": time.monotonic() - t0})


def _peak(state: RunState, log: journal.Journal) -> None:
    state.measure_peak()
    if state.peaks.dtypes:
        log.append({"kind": PEAK, **peak_entry(state.peaks)})


def replayed(
    entries: Sequence[journal.Entry], cells: Sequence[Cell]
) -> tuple[tuple[tuple[int, CellEnd], ...], dict[str, object] | None]:
    """A journal's measured process results (pass, end) in order, and its last peak entry; a failed
    process is left out (the resumed run measures it again)."""
    by_id = {c.id: c for c in cells}
    ends = tuple(
        (int(e["pass"]), decode_end(e["end"], by_id))
        for e in entries
        if e["kind"] == PROCESS
        and e["end"]["event"] == Event.RECORD
        and (e["end"]["row"] or {}).get("status") != Status.FAILED
    )
    peaks = [e for e in entries if e["kind"] == PEAK]
    return ends, (dict(peaks[-1]) if peaks else None)
