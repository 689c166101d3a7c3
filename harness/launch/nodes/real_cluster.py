"""Real clusters (``--cluster tf_config|slurm``: each task started with its ``TF_CONFIG``, or read
from the Slurm job step): this task's part of a run in its role (:attr:`ClusterConfig.role`;
docs/how-to/cluster.md). Each cell runs in a fresh worker process; peers and servers follow the
chief's run lease (:mod:`harness.launch.nodes.lease`) until the run is over."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from harness.contract.events import Event, EventLine
from harness.contract.job import Job, Launch, WorkerOptions, injected_fault
from harness.contract.records import Status
from harness.errors import EXIT_FAILURE, EXIT_OK, HarnessError
from harness.launch.cells.cluster import SLURM_PORT_BASE, ClusterConfig, slurm_jobs
from harness.launch.cells.runner import Launcher
from harness.launch.cells.single import run_worker
from harness.launch.nodes.lease import CellFailed, CellOrder, ChiefEnd, ChiefLink, Exit, RunLease
from harness.launch.nodes.scheduler import watch_of
from harness.launch.system.platform import usable_cores
from harness.launch.system.process import POLL_S, Deadline, Phase, Process, signal_text, start_worker
from harness.spec.cell import Cell
from harness.spec.protocol import Platform

RESOLVER_TIMEOUT_S = 180.0
"""Seconds the resolver's child process may take (it imports TensorFlow)."""


def resolve_slurm(ps: int, gpus_per_node: int, port_base: int = SLURM_PORT_BASE) -> ClusterConfig:
    """This process's cluster from the Slurm job step, through TensorFlow's SlurmClusterResolver in a
    child process (:mod:`harness.worker.slurm`). Tasks on a node get ports ``port_base``,
    ``port_base + 1``, ...; with GPUs, the resolver's GPU split."""
    needed = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")
    missing = [v for v in needed if v not in os.environ]
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


def task_launch(config: ClusterConfig, platform: Platform, host_cores: int) -> Launch:
    """How this task's worker of each cell starts: its TF_CONFIG, the host's cores split between its
    tasks (inter-op pool at least ``min_inter_op_threads``), its device mask (none where it trains
    nothing or on CPU)."""
    sharing = config.tasks_on_my_host
    cores = max(1, host_cores // sharing)
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
        tuple(env.items()), config.role, position, cores, config.hosts, cores * sharing > host_cores
    )


def run_cluster_task(
    cell: Cell,
    options: WorkerOptions,
    name: str,
    config: ClusterConfig,
    abort: Callable[[], str | None] = lambda: None,
) -> Iterator[EventLine]:
    """This task's part of a cell: one worker process joined to the cluster (:func:`run_worker`),
    stopped as soon as ``abort`` gives a reason (a task of the cluster lost)."""
    launch = task_launch(config, options.platform, usable_cores())
    return run_worker(cell, options, name, launch, joins=True, abort=abort)


PEER_WORD_S = 3.0
"""Seconds the chief's failed part of a cell waits for another task's word, which names the cause."""


def chief_launcher(config: ClusterConfig, lease: RunLease) -> Launcher:
    """The chief's :data:`~harness.launch.cells.runner.Launcher`: each cell announced to the other
    tasks through the run lease, then the chief's own part started; a task lost meanwhile, or one
    whose part failed, fails the cell, its reason named first (the chief's worker's after it)."""

    def launch(cell: Cell, options: WorkerOptions, name: str) -> Iterator[EventLine]:
        def why() -> str | None:
            gone = lease.lost()
            return gone.text() if gone is not None else lease.failed(name)

        lease.start_cell(name, cell.to_dict())
        for ev in run_cluster_task(cell, options, name, config, why):
            row = ev.get("row") or {}
            if ev["event"] == Event.FAILED or (
                ev["event"] == Event.RECORD and row.get("status") == Status.FAILED
            ):
                waited = time.monotonic() + PEER_WORD_S
                while (blame := why()) is None and time.monotonic() < waited:
                    time.sleep(POLL_S)
                own = str(ev.get("reason") or row.get("reason") or "")
                if blame and not own.startswith(blame):
                    reason = f"{blame}; the chief's worker: {own}"
                    ev = {**ev, "reason": reason, **({"row": {**row, "reason": reason}} if row else {})}
            yield ev

    return launch


@dataclass(frozen=True)
class TaskEnd:
    """How a peer's or a server's part of a run ended: its exit code and one line."""

    code: int
    text: str


def _joined(config: ClusterConfig, log_dir: Path) -> tuple[ChiefLink, WorkerOptions] | TaskEnd:
    """This task joined to the chief's run lease with the run's options (logs under ``log_dir``), or why not."""
    link = ChiefLink(config)
    failed = link.connect(over=watch_of(os.environ).over)
    if failed is not None:
        return TaskEnd(EXIT_FAILURE, failed.detail)
    job = Job.from_json(link.welcome)
    return link, replace(job.options, log_dir=log_dir)


def follow_chief(config: ClusterConfig, log_dir: Path) -> TaskEnd:
    """A MultiWorkerMirrored peer: its part of each cell the chief starts until the run is over (exit
    1 when the chief is lost); a newer cell stops the running one; a failed part is told to the
    chief. One line per cell; no results."""
    joined = _joined(config, log_dir)
    if isinstance(joined, TaskEnd):
        return joined
    link, options = joined

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
        if kind == Event.FAILED and not stop():  # the chief stopped it: it knows why
            link.tell(CellFailed(order.name, ended[1]))
        print(f"{kind} {cell.id}" + (f": {ended[1]}" if kind == Event.FAILED else ""), flush=True)


def serve_cluster_task(config: ClusterConfig, log_dir: Path) -> TaskEnd:
    """A parameter-server cluster's worker or ps task: one ``tf.distribute.Server`` from the chief's
    first cell until the run is over (or this process is interrupted); exit 0, or 1 when the chief
    was lost or never reached, or the server exited by itself (the chief is told why)."""
    joined = _joined(config, log_dir)
    if isinstance(joined, TaskEnd):
        return joined
    link, options = joined
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
            why = (
                f"its server process exited with {signal_text(proc.returncode or 0)} before the "
                f"chief's run ended; its log {proc.log_path}: {proc.tail()}"
            )
            link.tell(Exit(why))
            return TaskEnd(EXIT_FAILURE, f"server done: {why}")
        code = EXIT_OK if end.finished else EXIT_FAILURE
        return TaskEnd(code, f"server done: {end.detail}; server stopped with {how}; exit code {code}")
