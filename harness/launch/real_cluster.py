"""Real clusters: which TensorFlow cluster this process belongs to, and its part in a run.

``--cluster tf_config``: each process started by the user's scheduler with its own ``TF_CONFIG``;
``--cluster slurm``: TensorFlow's ``SlurmClusterResolver`` on the job step. Either way a
:class:`ClusterConfig`; every process runs the same cells in the same order, each in a fresh worker
joined to the same addresses. Roles (:attr:`ClusterConfig.role`): **chief** (the ``chief`` task,
else worker 0: runs every cell, the only writer of results); **peer** (another MultiWorkerMirrored
worker: runs every cell, writes nothing); **server** (a parameter-server cluster's workers and ps:
one ``tf.distribute.Server`` for the run, until the chief's run lease, :mod:`harness.launch.lease`,
says it is over). Pure but :func:`read_tf_config` and :func:`resolve_slurm`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from harness.contract.events import Event, EventLine
from harness.contract.job import Job, Launch, WorkerOptions, injected_fault
from harness.errors import EXIT_FAILURE, EXIT_OK, HarnessError
from harness.launch.cluster import SLURM_PORT_BASE, ClusterConfig, slurm_jobs
from harness.launch.lease import CellOrder, ChiefEnd, ChiefLink, RunLease
from harness.launch.platform import usable_cores
from harness.launch.process import (
    POLL_S,
    Deadline,
    Phase,
    Process,
    signal_text,
    start_worker,
)
from harness.launch.runner import Launcher
from harness.launch.single import run_worker
from harness.spec.cell import Cell
from harness.spec.protocol import Platform

RESOLVER_TIMEOUT_S = 180.0
"""Seconds the resolver's child process may take (it imports TensorFlow)."""


def resolve_slurm(ps: int, gpus_per_node: int, port_base: int = SLURM_PORT_BASE) -> ClusterConfig:
    """This process's cluster from the Slurm job step, through TensorFlow's SlurmClusterResolver
    (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE), run in a
    child process (:mod:`harness.worker.slurm`). Tasks on a node get ports ``port_base``,
    ``port_base + 1``, ...; with GPUs, the resolver's GPU split."""
    missing = [
        v
        for v in ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")
        if v not in os.environ
    ]
    if missing:
        raise HarnessError(
            f"--cluster slurm must run inside a Slurm job step (srun); {', '.join(missing)} not set."
        )
    jobs = slurm_jobs(int(os.environ["SLURM_STEP_NUM_TASKS"]), ps)
    with tempfile.TemporaryDirectory(prefix="harness-slurm-") as tmpdir:
        folder = Path(tmpdir)
        proc = Process(
            ["-m", "harness.worker.slurm", json.dumps(jobs), str(gpus_per_node), str(port_base)],
            {},
            folder / "resolver.log",
            folder / "resolver.jsonl",
            events_on_stdout=True,
            deadline=Deadline(Phase.STARTUP, RESOLVER_TIMEOUT_S),
        )
        how = "already exited" if proc.wait(RESOLVER_TIMEOUT_S) is not None else proc.stop()
        found = proc.read()
        if not found:
            raise HarnessError(
                "SlurmClusterResolver could not run: " + proc.failure(how, "resolver"), EXIT_FAILURE
            )
    answer = found[0]
    if "error" in answer:
        raise HarnessError(answer["error"])
    spec = tuple((k, tuple(addresses)) for k, addresses in answer["spec"])
    return ClusterConfig(spec, answer["task_type"], answer["task_index"], answer["gpu_mask"])


# ------------------------------------------------------------------------------------------------
# Real clusters: this process is one task, started by the user's scheduler (--cluster tf_config|slurm)
# ------------------------------------------------------------------------------------------------


def task_launch(config: ClusterConfig, platform: Platform, host_cores: int) -> Launch:
    """How this task's worker process of each cell is started: its TF_CONFIG, the host's cores split
    between the tasks on this host (and an inter-op pool of at least the strategy's
    ``min_inter_op_threads``), and its device mask (the Slurm resolver's GPU split; none for a
    parameter-server coordinator or ps task, or a CPU run; else as inherited from the scheduler)."""
    cores = max(1, host_cores // config.tasks_on_my_host)
    env = {
        "TF_CONFIG": config.tf_config(),
        "TF_NUM_INTRAOP_THREADS": str(cores),
        "OMP_NUM_THREADS": str(cores),
    }
    if host_cores < config.kind.min_inter_op_threads:  # TensorFlow would size its pool to the cores
        env["TF_NUM_INTEROP_THREADS"] = str(config.kind.min_inter_op_threads)
    mask = config.gpu_mask
    if platform.device_kind != "gpu" or config.task_type not in config.kind.training_tasks:
        mask = "-1"
    if mask is not None:
        env.update(CUDA_VISIBLE_DEVICES=mask, HIP_VISIBLE_DEVICES=mask)
    position = [(t, i) for t, addresses in config.spec for i in range(len(addresses))].index(
        (config.task_type, config.task_index)
    )
    return Launch(
        tuple(env.items()),
        config.role,
        position,
        cores,
        config.hosts,
        cores * config.tasks_on_my_host > host_cores,
    )


def run_cluster_task(
    cell: Cell,
    options: WorkerOptions,
    name: str,
    config: ClusterConfig,
    abort: Callable[[], str | None] = lambda: None,
) -> Iterator[EventLine]:
    """This task's part of a cell on a real cluster: one worker process joined to the cluster in
    ``config``, with the start-up, rendezvous and cell deadlines of :func:`run_worker`, stopped as
    soon as ``abort`` gives a reason (a task of the cluster lost)."""
    launch = task_launch(config, options.platform, usable_cores())
    return run_worker(cell, options, name, launch, joins=True, abort=abort)


def chief_launcher(config: ClusterConfig, lease: RunLease) -> Launcher:
    """The chief's launcher of every cell (see :data:`harness.launch.runner.Launcher`): each cell
    is announced to the other tasks through the run lease, then the chief's own part starts; a
    task lost meanwhile fails the cell at once, naming it."""

    def lost() -> str | None:
        gone = lease.lost()
        return None if gone is None else gone.text()

    def launch(cell: Cell, options: WorkerOptions, name: str) -> Iterator[EventLine]:
        lease.start_cell(name, cell.to_dict())
        return run_cluster_task(cell, options, name, config, lost)

    return launch


@dataclass(frozen=True)
class TaskEnd:
    """How a peer's or a server's part of a real-cluster run ended: its exit code (0 once the
    chief's run finished; 1 when the chief was lost or never reached, or a server process exited by
    itself), in one line."""

    code: int
    text: str


def _joined(config: ClusterConfig, log_dir: Path) -> tuple[ChiefLink, WorkerOptions, Cell] | TaskEnd:
    """This task joined to the chief's run lease, with the run's options (logs under ``log_dir``)
    and its first cell, from the chief's welcome; or why it could not join."""
    link = ChiefLink(config)
    failed = link.connect()
    if failed is not None:
        return TaskEnd(EXIT_FAILURE, failed.detail)
    job = Job.from_json(link.welcome)
    return link, replace(job.options, log_dir=log_dir), job.cell


def follow_chief(config: ClusterConfig, log_dir: Path) -> TaskEnd:
    """A MultiWorkerMirrored peer's part of a real-cluster run: run its part of each cell the chief
    starts, as soon as the chief says so, until the chief's run is over. The cell that runs stops
    when the run ends, the chief is lost (the task then ends with 1), or the chief has started
    another cell (its own part failed early): the peer goes straight to the newest. Prints one line
    per cell; writes no results."""
    joined = _joined(config, log_dir)
    if isinstance(joined, TaskEnd):
        return joined
    link, options, _ = joined

    def stop() -> str | None:
        return link.over() or ("the chief has started another cell" if link.waiting() else None)

    counts = {Event.FINISHED: 0, Event.FAILED: 0}
    while True:
        order = link.next()
        while isinstance(order, CellOrder) and link.waiting():  # stale: the chief is past it
            order = link.next()
        if isinstance(order, ChiefEnd):
            done = f"{counts[Event.FINISHED]} cells finished, {counts[Event.FAILED]} failed"
            return TaskEnd(EXIT_OK if order.finished else EXIT_FAILURE, f"peer done: {done}; {order.detail}")
        if order is None:
            continue
        cell = Cell.from_dict(order.cell)
        ended = Event.FAILED, "its process ended without a word"
        for ev in run_cluster_task(cell, options, order.name, config, stop):
            if ev["event"] in (Event.FINISHED, Event.RECORD, Event.FAILED):
                ended = Event(ev["event"]), str(ev.get("reason") or "")
                break
        kind = Event.FINISHED if ended[0] != Event.FAILED else Event.FAILED
        counts[kind] += 1
        print(f"{kind} {cell.id}" + (f": {ended[1]}" if kind == Event.FAILED else ""), flush=True)


def serve_cluster_task(config: ClusterConfig, log_dir: Path) -> TaskEnd:
    """A parameter-server cluster's worker or ps task: one ``tf.distribute.Server`` for the whole
    run, started when the chief starts its first cell (not before: the chief times the link first,
    and TensorFlow's import would slow that transfer on a small node), until the chief's run is over
    (the run lease). Then the server process is stopped (SIGTERM, SIGKILL after ``KILL_GRACE_S``)
    and the task ends with 0, or 1 when the chief was lost or never reached. A server process that
    exits by itself ends the task with 1. Stops the server when this process is interrupted
    (SIGTERM or Ctrl-C)."""
    joined = _joined(config, log_dir)
    if isinstance(joined, TaskEnd):
        return joined
    link, options, _ = joined
    first = link.next()
    if not isinstance(first, CellOrder):  # the run ended before any cell
        over = first if isinstance(first, ChiefEnd) else ChiefEnd(False, None, "no order")
        code = EXIT_OK if over.finished else EXIT_FAILURE
        return TaskEnd(code, f"server done: {over.detail}; no cell ran; exit code {code}")
    cell = Cell.from_dict(first.cell)
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        launch = task_launch(config, options.platform, usable_cores())
        proc = start_worker(
            Job(cell, options, launch, injected_fault()),
            Path(tmpdir),
            f"{config.task_type}{config.task_index}",
        )
        end: ChiefEnd | None = None
        try:
            while proc.running and end is None:
                order = link.next(POLL_S)
                end = order if isinstance(order, ChiefEnd) else None
        finally:
            how = proc.stop()
        if end is None:
            return TaskEnd(
                EXIT_FAILURE,
                f"server done: the server process exited with {signal_text(proc.returncode or 0)} "
                f"before the chief's run ended; its log {proc.log_path}: {proc.tail()}",
            )
        code = EXIT_OK if end.finished else EXIT_FAILURE
        return TaskEnd(code, f"server done: {end.detail}; server stopped with {how}; exit code {code}")
