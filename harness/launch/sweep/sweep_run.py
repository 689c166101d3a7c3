"""``run``'s measuring, from its checked parameters (:mod:`harness.commands.run` builds the
:class:`~harness.launch.sweep.run_params.Work` and the :class:`Request`) to its result. Each
function that measures holds the machine-wide lock (:mod:`harness.launch.system.lock`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.contract.job import Job, WorkerOptions
from harness.contract.records import CellRow, Status
from harness.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, HarnessError
from harness.launch.cells.cluster import ClusterConfig
from harness.launch.cells.runner import RunResult, new_run_id, run_date, suite_version
from harness.launch.instances.resume import Resumed, host_of, load, plan_entry
from harness.launch.instances.turns import Plan
from harness.launch.nodes import chief
from harness.launch.nodes.chief import ChiefRun
from harness.launch.nodes.lease import RunLease, lease_address, task_names
from harness.launch.nodes.real_cluster import TaskEnd, follow_chief, serve_cluster_task
from harness.launch.nodes.scheduler import watch_of
from harness.launch.sweep.budget import max_live, plan_groups, run_in_turns
from harness.launch.sweep.collectives import run_collectives
from harness.launch.sweep.limits import PRIORS, check_minimum, minimum_s
from harness.launch.sweep.run_params import Identity, Output, Work
from harness.launch.system import forks
from harness.launch.system.lock import command_line, taken
from harness.launch.system.platform import HostMachine, machine, machine_facts, this_machine
from harness.results import journal
from harness.spec.groups import Group, race_lines
from harness.spec.rules import unsupported_reason
from harness.spec.strategies import Role


@dataclass(frozen=True)
class Request:
    """How ``run`` asks for a run: the ``results`` folder; ``wait_lock``: wait for another run's machine
    lock (else a HarnessError names its holder); ``what``: the run in words, after its id; ``sweep``:
    the named sweep ("" for axes given alone; a too small budget's hint keeps it); ``started``: the
    command's start, monotonic s (a local run's budget counts from there)."""

    results: Path
    wait_lock: bool = False
    what: str = ""
    sweep: str = ""
    started: float | None = None


@dataclass(frozen=True)
class Outline:
    """What a local run would do: its sets of configurations compared live (``races`` of them
    raced), at most ``live`` processes at once, and its budget's minimum (seconds, by the prior)."""

    sets: int
    races: int
    live: int
    minimum_s: float
    contenders: tuple[str, ...] = ()
    """Each model's contenders, a line per race (:func:`harness.spec.groups.race_lines`)."""


def _groups(work: Work) -> list[Group]:
    """The groups a local run measures: its runnable cells, its contenders raced first."""
    runnable = [c for c in work.cells if unsupported_reason(c, work.platform) is None]
    return plan_groups(runnable, work.contenders, max_live(work.protocol))


def outline(work: Work) -> Outline:
    """What a local run of ``work`` would do (the dry run)."""
    found, live = _groups(work), max_live(work.protocol)
    minimum = minimum_s(found, work.protocol, Plan.of(work.protocol, 0.0), PRIORS[work.platform.device_kind])
    runnable = [c for g in found for m in g.members for c in [m.cell]]
    lines = tuple(race_lines(runnable, work.contenders, live))
    return Outline(len(found), sum(g.race for g in found), live, minimum, lines)


def _new_run(work: Work, request: Request, **extra: object) -> tuple[str, HostMachine, journal.Journal]:
    """A new run's id, its machine and its journal (its plan, then ``extra``), said on stdout."""
    run_id = new_run_id(dt.datetime.now(dt.UTC))
    host = work.machine or this_machine()
    entry = plan_entry(
        run_id,
        run_date(run_id),
        list(work.cells),
        work.protocol,
        work.platform,
        work.mnist_path,
        machine(suite_version(), host),  # its name and facts: a resumed run keeps them
        command_line(),
        work.contenders,
    )
    log = journal.Journal.create(journal.path_of(request.results, run_id), {**entry, **extra})
    print(f"run {run_id}: {request.what}", flush=True)
    return run_id, host, log


def measure_local(work: Work, request: Request) -> RunResult:
    """A new local run in turns (:func:`harness.launch.sweep.budget.run_in_turns`), journaled so that
    a killed run can go on (:func:`measure_resumed`); its minimum checked against the budget first."""
    out, pr = request.results, work.protocol
    with taken(out, request.wait_lock):
        check_minimum(_groups(work), pr, Plan.of(pr, 0.0), PRIORS[work.platform.device_kind], request.sweep)
        run_id, host, log = _new_run(work, request)
        print(f"machine: {host.name} (its rows carry this name; run --machine NAME names it)", flush=True)
        work = replace(work, machine=host)
        return _in_turns(work, Output(out, log), Identity(run_id, started=request.started))


def load_journal(out: Path, ref: str) -> Resumed:
    """The journaled run ``ref`` (its id, or latest) under ``out``, checked against this machine and
    software."""
    return load(out, ref, lambda: machine(suite_version()))


def measure_resumed(resumed: Resumed, request: Request, host: HostMachine | None = None) -> RunResult:
    """The run of ``resumed`` goes on where it stopped, its journaled instances kept; its rows carry
    ``host`` (None: :func:`harness.launch.instances.resume.host_of` the journal)."""
    plan, out = resumed.plan, request.results
    if plan.cluster is not None:
        raise HarnessError(
            f"run {plan.run_id} was measured on a real cluster of {_shape_words(plan.cluster)}: "
            "resume it from every task of a job step of the same shape, e.g. srun ... python -m "
            f"harness run --cluster slurm --resume {plan.run_id} --results {out}"
        )
    host = host or host_of(plan, None, machine_facts())
    work = Work(tuple(plan.cells), plan.protocol, plan.platform, plan.mnist_path, plan.contenders, host)
    with taken(request.results, request.wait_lock):
        log = journal.Journal.reopen(resumed.path)
        print(resumed.taken_over(f": {resumed.instances()} group instances", out), flush=True)
        return _in_turns(work, Output(out, log), Identity(plan.run_id, resumed))


def _in_turns(work: Work, output: Output, identity: Identity) -> RunResult:
    """A journaled run in turns, with its fork servers; a full disk stops it saying how to resume."""
    out, run_id = output.results, identity.run_id
    assert output.journal is not None
    resume = f"--resume {run_id} --results {out}"
    print(f"(if it is stopped: python -m harness run {resume})", flush=True)
    with _full_disk(out, resume), output.journal, forks.serving(work.protocol.fork):
        return run_in_turns(work, output, identity)


@contextlib.contextmanager
def _full_disk(out: Path, resume: str, who: str = "") -> Iterator[None]:
    """A full disk (ENOSPC) under ``out`` becomes a HarnessError (exit 1) saying how to resume
    (``resume``'s flags, run ``who``: e.g. " from every task")."""
    try:
        yield
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise HarnessError(
            f"the disk is full ({e.filename or out}): the run stopped; everything measured so far is "
            f"in its journal. Free some space, then{who}: python -m harness run {resume}",
            EXIT_FAILURE,
        ) from None


def measure_as_chief(work: Work, request: Request, config: ClusterConfig) -> RunResult:
    """The chief of a real cluster: a new journaled run it drives (:mod:`harness.launch.nodes.chief`)."""
    with taken(request.results, request.wait_lock):
        run_id, host, log = _new_run(work, request, cluster=cluster_shape(config))
        run = ChiefRun(work.cells, work.protocol, work.platform, host, work.mnist_path, run_id)
        return _drive(run, request, config, log)


def resume_as_chief(
    resumed: Resumed, request: Request, config: ClusterConfig, host: HostMachine
) -> RunResult:
    """The chief goes on with a journaled cluster run of the same shape: only the processes its
    journal lacks run."""
    plan = resumed.plan
    if plan.cluster != cluster_shape(config):
        raise HarnessError(
            f"run {plan.run_id} was measured on a cluster of {_shape_words(plan.cluster)}; this job step "
            f"is {_shape_words(cluster_shape(config))}. Resume it on a cluster of the same shape."
        )
    ends, peak = chief.replayed(resumed.entries, plan.cells)
    with taken(request.results, request.wait_lock):
        log = journal.Journal.reopen(resumed.path)
        log.append({"kind": "resumed", "elapsed_s": resumed.elapsed_s})
        print(resumed.taken_over(f" as the chief: {len(ends)} processes", request.results), flush=True)
        run = ChiefRun(
            tuple(plan.cells),
            plan.protocol,
            plan.platform,
            host,
            plan.mnist_path,
            plan.run_id,
            ends,
            peak,
            resumed.elapsed_s,
            resumed.resumes + 1,
        )
        return _drive(run, request, config, log)


def cluster_shape(config: ClusterConfig) -> dict[str, int]:
    """Task counts by type: what a resumed cluster run must match."""
    return {kind: len(addresses) for kind, addresses in config.spec}


def _shape_words(shape: dict[str, int] | None) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in (shape or {}).items()) or "no cluster (a local run)"


def _drive(run: ChiefRun, request: Request, config: ClusterConfig, log: journal.Journal) -> RunResult:
    """The run lease held for the whole run, every other task waited for, then the passes."""
    runnable = [c for c in run.cells if unsupported_reason(c, run.platform) is None]
    options = WorkerOptions.of(run.protocol, run.platform, request.results / "logs", run.mnist_path)
    try:  # every task is told the run's options and first cell (a server's start) when it joins
        lease = RunLease(config, Job((runnable or run.cells)[0], options).to_json())
    except OSError as e:
        raise HarnessError(
            f"the chief's run lease needs TCP port {lease_address(config)[1]} on this host (the "
            f"other tasks follow the run through it): {e.strerror or e}",
            EXIT_FAILURE,
        ) from None
    started = time.monotonic()
    cluster = f"slurm --ps {config.ps}" if "SLURM_STEP_ID" in os.environ else "tf_config"
    resume = f"--cluster {cluster} --resume {run.run_id} --results {request.results}"
    with _full_disk(request.results, resume, " from every task"), log, lease:
        names = task_names(config)
        print(f"run lease on port {lease.port}: waiting for {len(names)} other task(s) to join", flush=True)
        lease.wait_for_tasks(watch_of(os.environ).seen)

        def stop() -> str | None:
            gone = lease.lost()
            return None if gone is None else gone.text()

        print(f"cluster: {config.nodes} node(s): {config.placement}", flush=True)
        result = chief.measure(run, request.results, config, lease, log, stop, started)
        left = lease.finish(exit_code(result))
        if left:
            print(f"tasks never connected to the run lease: {', '.join(left)}", file=sys.stderr)
    return result


def take_part(out: Path, config: ClusterConfig) -> TaskEnd:
    """A task of a real cluster other than the chief, until the chief's run lease ends: a peer runs
    its part of each cell, a server serves the run; no results (logs under ``out/logs``)."""
    task = f"{config.task_type}{config.task_index}"
    stamp = dt.datetime.now(dt.UTC)
    log_dir = out / "logs" / stamp.strftime("%Y-%m-%d") / f"{stamp:%Y%m%dT%H%M%SZ}-{task}"
    host, port = lease_address(config)
    print(
        f"cluster task {config.task_type} {config.task_index} ({config.role}) at {config.address}; "
        f"following the chief's run lease at {host}:{port}; logs -> {log_dir}",
        flush=True,
    )
    if config.role == Role.SERVER:
        return serve_cluster_task(config, log_dir)
    return follow_chief(config, log_dir)


def measure_collectives(work: Work, request: Request, max_bytes: int) -> RunResult:
    """``--sweep collectives``: every topology's all-reduces timed, their rows stored."""
    with taken(request.results, request.wait_lock):
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
    """The ids of the rows whose cell failed or ran wrongly (``failed``, ``invalid``), which make a
    run end non-zero (``unsupported`` and ``not measured`` do not)."""
    return [r.cell.cell_id for r in rows if r.status in (Status.FAILED, Status.INVALID)]


def exit_code(result: RunResult) -> int:
    """1 when the run stopped on its own or a cell failed (:func:`failed_cells`), 130 when it was
    interrupted, else 0."""
    if result.stopped:
        return EXIT_FAILURE
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILURE if failed_cells(result.rows) else EXIT_OK
