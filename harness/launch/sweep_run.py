"""``run``'s measuring, from its checked parameters to its result. :mod:`harness.commands.run`
parses and checks the flags, builds the :class:`~harness.launch.run_params.Work` and the
:class:`Request`, calls one function here and prints what it returns.

- :func:`measure_local`: a local run in turns under its budget
  (:func:`harness.launch.budget.run_in_turns`), refused before any process when its minimum cannot
  fit the budget, journaled from its first line (a new run id and its plan) so that a killed run
  can go on: :func:`load_journal` reads and checks such a run, :func:`measure_resumed` goes on with
  it;
- :func:`measure_as_chief`: the chief of a real cluster, in passes
  (:func:`harness.launch.runner.run_sweep`), holding the run lease while parameter servers serve it;
- :func:`take_part`: a peer (every cell, in the chief's order) or a server (the whole run) of a
  real cluster; it writes no results;
- :func:`measure_collectives`: ``--sweep collectives``'s all-reduce timings.

Each of them that measures holds the machine-wide lock (:mod:`harness.launch.lock`) while it
does. :func:`outline` is what a local run would do (the dry run's numbers); :func:`failed_cells`
and :func:`exit_code` are how a run ended.
"""

from __future__ import annotations

import datetime as dt
import errno
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.contract.job import WorkerOptions
from harness.contract.records import CellRow, Status
from harness.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, HarnessError
from harness.launch import forks
from harness.launch.budget import PRIORS, check_minimum, max_live, minimum_s, plan_groups, run_in_turns
from harness.launch.cluster import ClusterConfig
from harness.launch.collectives import run_collectives
from harness.launch.lease import RunLease, lease_address, server_names
from harness.launch.lock import MachineLock, command_line
from harness.launch.platform import HostMachine, machine, machine_facts, this_machine
from harness.launch.real_cluster import cluster_launcher, serve_cluster_task
from harness.launch.resume import Resumed, host_of, load, plan_entry
from harness.launch.run_params import Identity, Output, Work
from harness.launch.runner import RunResult, follow_sweep, new_run_id, run_date, run_sweep, suite_version
from harness.launch.turns import Plan
from harness.results import journal
from harness.spec.groups import Group
from harness.spec.rules import unsupported_reason
from harness.spec.strategies import Role


@dataclass(frozen=True)
class Request:
    """How ``run`` asks for a run: the ``results`` folder; whether to wait for another run's
    machine lock (``wait_lock``; else a HarnessError names its holder); ``what``: the run in words,
    on its first line after its id; ``sweep``: the named sweep its cells came from ("" for axes
    given alone; the hint of a budget too small keeps it); ``started``: when the command started,
    on the monotonic clock (a local run's budget counts from there)."""

    results: Path
    wait_lock: bool = False
    what: str = ""
    sweep: str = ""
    started: float | None = None


@dataclass(frozen=True)
class Outline:
    """What a local run would do, before its first process: its sets of configurations compared
    live (``races`` of them each model's usual choices raced), at most ``live`` processes at once,
    and the minimum its budget must hold (seconds, by the prior estimate)."""

    sets: int
    races: int
    live: int
    minimum_s: float


@dataclass(frozen=True)
class TaskEnd:
    """How a peer's or a server's part of a real-cluster run ended: its exit code, in one line."""

    code: int
    text: str


def _groups(work: Work) -> list[Group]:
    """The groups a local run measures: its runnable cells, its contenders raced first."""
    runnable = [c for c in work.cells if unsupported_reason(c, work.platform) is None]
    return plan_groups(runnable, work.contenders, max_live(work.protocol))


def outline(work: Work) -> Outline:
    """What a local run of ``work`` would do (the dry run)."""
    found = _groups(work)
    minimum = minimum_s(found, work.protocol, Plan.of(work.protocol, 0.0), PRIORS[work.platform.device_kind])
    return Outline(len(found), sum(g.race for g in found), max_live(work.protocol), minimum)


def _locked(request: Request) -> MachineLock:
    """The machine-wide measuring lock, taken: a HarnessError naming its holder when another run
    measures here (unless ``request.wait_lock``)."""
    lock = MachineLock(request.results)
    lock.acquire(request.wait_lock)
    return lock


def measure_local(work: Work, request: Request) -> RunResult:
    """A new local run in turns, journaled (see the module docstring). Its minimum is checked
    against the budget before its id, its journal or any process."""
    out, pr = request.results, work.protocol
    with _locked(request):
        check_minimum(_groups(work), pr, Plan.of(pr, 0.0), PRIORS[work.platform.device_kind], request.sweep)
        run_id = new_run_id(dt.datetime.now(dt.UTC))
        host = work.machine or this_machine()
        work = replace(work, machine=host)
        entry = plan_entry(
            run_id,
            run_date(run_id),
            list(work.cells),
            pr,
            work.platform,
            work.mnist_path,
            machine(suite_version(), host),  # its name and facts: a resumed run keeps them
            command_line(),
            work.contenders,
        )
        log = journal.Journal.create(journal.path_of(out, run_id), entry)
        print(f"run {run_id}: {request.what}", flush=True)
        print(
            f"machine: {host.name} (its rows carry this name; run --machine NAME names it)",
            flush=True,
        )
        return _in_turns(work, Output(out, log), Identity(run_id, started=request.started))


def load_journal(out: Path, ref: str) -> Resumed:
    """The journaled run ``ref`` (its id, or latest) under ``out``, checked against this machine and
    software (a HarnessError naming what differs)."""
    return load(out, ref, lambda: machine(suite_version()))


def measure_resumed(resumed: Resumed, request: Request, host: HostMachine | None = None) -> RunResult:
    """The run of ``resumed`` goes on where it stopped: its cells, protocol and budget, its
    journaled instances kept; its rows carry ``host`` (:func:`harness.launch.resume.host_of`: the
    journal's machine name and facts; None: the journal's, or this host's where it has none)."""
    plan, out = resumed.plan, request.results
    host = host or host_of(plan, None, machine_facts())
    work = Work(tuple(plan.cells), plan.protocol, plan.platform, plan.mnist_path, plan.contenders, host)
    with _locked(request):
        log = journal.Journal.reopen(resumed.path)
        print(
            f"run {plan.run_id} resumed: {resumed.instances()} group instances kept from its journal, "
            f"{resumed.elapsed_s / 60:.1f} of {plan.protocol.budget_min:g} min of its budget spent; "
            f"results -> {out}",
            flush=True,
        )
        return _in_turns(work, Output(out, log), Identity(plan.run_id, resumed))


def _in_turns(work: Work, output: Output, identity: Identity) -> RunResult:
    """A journaled run in turns, with its fork servers; a full disk stops it saying how to resume."""
    out, run_id = output.results, identity.run_id
    assert output.journal is not None
    print(f"(if it is stopped: python -m harness run --resume {run_id} --results {out})", flush=True)
    with output.journal, forks.serving(work.protocol.fork):
        try:
            return run_in_turns(work, output, identity)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            raise HarnessError(
                f"the disk is full ({e.filename or out}): the run stopped; every instance measured "
                f"so far is in its journal. Free some space, then: python -m harness run --resume "
                f"{run_id} --results {out}",
                EXIT_FAILURE,
            ) from None


def measure_as_chief(work: Work, request: Request, config: ClusterConfig) -> RunResult:
    """The chief of a real cluster measures every cell in passes and writes every row; with
    parameter servers, while holding the run lease (:class:`harness.launch.lease.RunLease`), so
    that the servers end when the run does, with its exit code."""
    with _locked(request):
        if not server_names(config):
            return _passes(work, request, config)
        try:
            lease = RunLease(config)
        except OSError as e:
            raise HarnessError(
                f"the chief's run lease needs TCP port {lease_address(config)[1]} on this "
                f"host (the servers watch it to learn when the run is over): "
                f"{e.strerror or e}",
                EXIT_FAILURE,
            ) from None
        with lease:
            print(
                f"run lease on port {lease.port}: {len(server_names(config))} servers end when this run does",
                flush=True,
            )
            result = _passes(work, request, config)
            missing = lease.finish(exit_code(result))
            if missing:
                print(f"servers never connected to the run lease: {', '.join(missing)}", file=sys.stderr)
        return result


def _passes(work: Work, request: Request, config: ClusterConfig) -> RunResult:
    run_id = new_run_id(dt.datetime.now(dt.UTC))
    print(f"run {run_id}: {request.what}", flush=True)
    return run_sweep(
        list(work.cells),
        work.protocol,
        work.platform,
        request.results,
        work.mnist_path,
        launcher=cluster_launcher(config),
        adaptive=False,
        run_id=run_id,
        machine=work.machine,
    )


def take_part(work: Work, out: Path, config: ClusterConfig) -> TaskEnd:
    """A task of a real cluster other than the chief: a peer takes part in every cell, a server
    serves the whole run (until the chief's run lease ends); neither writes results (logs go
    under ``out/logs``). KeyboardInterrupt when interrupted."""
    task = f"{config.task_type}{config.task_index}"
    stamp = dt.datetime.now(dt.UTC)
    log_dir = out / "logs" / stamp.strftime("%Y-%m-%d") / f"{stamp:%Y%m%dT%H%M%SZ}-{task}"
    print(
        f"cluster task {config.task_type} {config.task_index} ({config.role}) at {config.address}; "
        f"logs -> {log_dir}",
        flush=True,
    )
    options = WorkerOptions.of(work.protocol, work.platform, log_dir, work.mnist_path)
    if config.role == Role.SERVER:
        host, port = lease_address(config)
        print(f"serving until the chief's run is over (its run lease at {host}:{port})", flush=True)
        end = serve_cluster_task(work.cells[0], options, config)
        return TaskEnd(end.code, f"server done: {end.detail}; exit code {end.code}")
    counts = follow_sweep(list(work.cells), work.protocol, work.platform, options, cluster_launcher(config))
    return TaskEnd(EXIT_OK, f"peer done: {counts['finished']} cells finished, {counts['failed']} failed")


def measure_collectives(work: Work, request: Request, max_bytes: int) -> RunResult:
    """``--sweep collectives``: every topology's all-reduces timed, their rows stored."""
    with _locked(request):
        run_id = new_run_id(dt.datetime.now(dt.UTC))
        print(f"run {run_id}: {request.what}", flush=True)
        return run_collectives(
            work.cells,
            work.protocol,
            work.platform,
            request.results,
            max_bytes,
            run_id=run_id,
            machine=work.machine,
        )


def failed_cells(rows: Sequence[CellRow]) -> list[str]:
    """The ids of the rows whose cell failed or ran wrongly (``failed``, ``invalid``): what makes a
    run end non-zero. ``unsupported`` (TensorFlow cannot run it, known before) and ``not
    measured`` (the budget) are not failures."""
    return [r.cell.cell_id for r in rows if r.status in (Status.FAILED, Status.INVALID)]


def exit_code(result: RunResult) -> int:
    """1 when the run stopped on its own (another program disturbed it), 130 when it was
    interrupted, 1 when a cell failed or ran wrongly (:func:`failed_cells`), else 0."""
    if result.stopped:
        return EXIT_FAILURE
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILURE if failed_cells(result.rows) else EXIT_OK
