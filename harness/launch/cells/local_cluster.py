"""Multi-worker cells on 127.0.0.1: TensorFlow's own cluster runtime (TF_CONFIG, gRPC collectives),
one local process per task, with phases and deadlines; every task of a cell in the cell's own
network namespace with only loopback where the platform's port scope isolates
(:mod:`harness.launch.system.isolation`), so no TensorFlow server of it can be reached from the network."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.contract.events import Event, EventLine, Facts
from harness.contract.job import Job, Launch, WorkerOptions, injected_fault
from harness.launch.system.isolation import NoNamespace, namespace
from harness.launch.system.process import POLL_S, Deadline, Phase, Process, signal_text, start_worker
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.spec.strategies import Role, Task

FINISH_GRACE_S = 30.0


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (held open together while chosen; in this process's
    namespace: a cell's own namespace is new, so they are free there too)."""
    import socket

    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def cores_per_task(cell: Cell, host_cores: int) -> int:
    """Threads for each worker (and ps task) of a local cell: the host's cores split evenly
    between the processes that compute or apply updates (never below 1)."""
    return max(1, host_cores // (cell.workers + cell.ps))


def is_oversubscribed(cell: Cell, cores: int, host_cores: int) -> bool:
    """Whether the cell's workers and ps tasks together ask for more cores than the host has
    (the parameter-server coordinator, which mostly waits, is not counted)."""
    return cores * (cell.workers + cell.ps) > host_cores


def cluster_env(
    cell: Cell, tasks: Sequence[Task], addresses: list[str], position: int, cores: int, platform: Platform
) -> dict[str, str]:
    """Environment of local task ``tasks[position]``: TF_CONFIG, its thread counts, its device mask
    (compute task c gets GPUs c*replicas .. c*replicas + replicas - 1; other tasks none)."""
    task = tasks[position]
    spec: dict[str, list[str]] = {}  # each task type's addresses, in task-index order
    for t, address in zip(tasks, addresses, strict=True):
        spec.setdefault(t.type, []).append(address)
    env = {
        "TF_CONFIG": json.dumps({"cluster": spec, "task": {"type": task.type, "index": task.index}}),
        "TF_NUM_INTRAOP_THREADS": str(cores),
        "OMP_NUM_THREADS": str(cores),
    }
    training = [t for t in tasks if t.type in cell.kind.training_tasks]
    compute = training.index(task) if task in training else None
    replicas = cell.replicas
    mask = "-1"  # no GPU for a CPU cell (even on a GPU machine), a coordinator or a ps task
    if platform.device_kind == "gpu" and compute is not None:
        mask = ",".join(platform.gpu_id(compute * replicas + r) for r in range(replicas))
    env.update(CUDA_VISIBLE_DEVICES=mask, HIP_VISIBLE_DEVICES=mask)
    return env


def absent_worker(cell: Cell) -> int | None:
    """Test hook ``absent@N:<cell_id>`` (among others separated by ``;``): task N of
    ``cell.tasks`` is never started (a peer that never appears)."""
    for fault in (injected_fault() or "").split(";"):
        kind, _, target = fault.partition(":")
        if target == cell.id and kind.startswith("absent@"):
            return int(kind.split("@")[1])
    return None


@dataclass
class _Cluster:
    """The local processes of one multi-worker cell and what the launcher has seen of them."""

    cell: Cell
    tasks: tuple[Task, ...]
    deadline: Deadline
    procs: dict[int, Process] = field(default_factory=dict)
    seen: dict[int, set[str]] = field(default_factory=dict)
    facts: Facts | None = None
    recorded: bool = False

    def drain(self) -> Iterator[EventLine]:
        """Read every task's events; yield the chief's start and record (with its facts)."""
        for i, proc in self.procs.items():
            for ev in proc.events():
                self.seen.setdefault(i, set()).add(ev["event"])
                if i != 0:  # only the chief's events reach the caller
                    continue
                if ev["event"] == Event.READY:
                    self.facts = ev["facts"]
                self.recorded = self.recorded or ev["event"] == Event.RECORD
                if ev["event"] in (Event.START, Event.RECORD):
                    yield {**ev, "facts": self.facts}

    def _all(self, event: Event, among: Iterable[int]) -> bool:
        return all(event in self.seen.get(i, ()) for i in among)

    def advance(self, options: WorkerOptions) -> None:
        """Start-up -> rendezvous once every started task has started; -> the cell once every task
        has joined; -> shutdown once the chief has its record."""
        if self.deadline.phase == Phase.STARTUP and self._all(Event.START, self.procs):
            self.deadline.enter(Phase.RENDEZVOUS, options.settings.rendezvous_timeout_s)
        if self.deadline.phase == Phase.RENDEZVOUS and self._all(Event.JOINED, range(len(self.tasks))):
            self.deadline.enter(Phase.CELL, options.cell_timeout_s, self.cell.id)
        if self.deadline.phase == Phase.CELL and self.recorded:
            self.deadline.enter(Phase.SHUTDOWN, FINISH_GRACE_S)

    def _exited_wrongly(self, i: int) -> bool:
        """Task i exited when it must not have: with an error, or a server at all."""
        code = self.procs[i].returncode
        return code is not None and (code != 0 or (self.tasks[i].role == Role.SERVER and not self.recorded))

    def outcome(self) -> str | None:
        """None while the cell goes on; "" when it is over with a record; else what went wrong."""
        dead = [i for i in self.procs if self._exited_wrongly(i)]
        if dead:
            proc = self.procs[dead[0]]
            return (
                f"{self.tasks[dead[0]].label} exited with {signal_text(proc.returncode or 0)} "
                f"during {self.deadline.text}; its log {proc.log_path}: {proc.tail()}"
            )
        running = [i for i, p in self.procs.items() if p.running]
        if all(self.tasks[i].role == Role.SERVER for i in running) and (self.recorded or not running):
            return "" if self.recorded else f"every task exited without a record during {self.deadline.text}"
        if self.deadline.overdue:
            return self.deadline.passed() + self._who_is_missing()
        return None

    def _who_is_missing(self) -> str:
        absent = [t.label for i, t in enumerate(self.tasks) if Event.START not in self.seen.get(i, ())]
        waiting = [self.tasks[i].label for i in self.procs if Event.JOINED not in self.seen.get(i, ())]
        if absent:
            return f" ({', '.join(absent)} not there)"
        if self.deadline.phase == Phase.RENDEZVOUS and waiting:
            return f" ({', '.join(waiting)} never joined)"
        return ""


def run_cluster(cell: Cell, options: WorkerOptions, name: str = "cell") -> Iterator[EventLine]:
    """Run a multi-worker cell as local processes (``cell.tasks``); yield the chief's events. Its
    deadlines and faults: docs/explanation/multi-worker.md, "Faults and deadlines" (the rendezvous's:
    ``settings.rendezvous_timeout_s``; the peers' exit: ``FINISH_GRACE_S``); a task that dies or a
    phase that overruns yields one ``failed`` event. Ports are released with the processes."""
    cluster = _Cluster(cell, cell.tasks, Deadline(Phase.STARTUP, options.startup_timeout_s))
    with contextlib.ExitStack() as stack:
        try:
            isolated = stack.enter_context(namespace(options.platform))
        except NoNamespace as e:
            yield {"event": Event.FAILED, "cell_id": cell.id, "facts": None, "reason": no_namespace_text(e)}
            return
        tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="harness-"))
        try:
            _start_tasks(cluster, options, name, Path(tmpdir), isolated)
            while True:
                yield from cluster.drain()
                cluster.advance(options)
                if (culprit := cluster.outcome()) is not None:
                    break
                time.sleep(POLL_S)
        finally:
            hows = {i: p.stop() for i, p in cluster.procs.items()}
        yield from cluster.drain()
    if cluster.recorded:
        return
    if culprit.startswith("deadline"):
        culprit += "; stopped with " + ", ".join(f"{cluster.tasks[i].label}: {h}" for i, h in hows.items())
    reason = culprit or "the chief exited without a record"
    yield {"event": Event.FAILED, "cell_id": cell.id, "facts": cluster.facts, "reason": reason}


def no_namespace_text(error: OSError) -> str:
    """A failed row's reason where a cell's namespace could not be made after the run's check."""
    return f"its network namespace could not be made ({error}), so its TensorFlow servers were not started"


def _start_tasks(
    cluster: _Cluster, options: WorkerOptions, name: str, folder: Path, isolated: dict[str, str]
) -> None:
    """Start every task of the cell but the one the ``absent@N`` test hook leaves out, each with the
    variables that join the cell's namespace (``isolated``)."""
    cell, tasks = cluster.cell, cluster.tasks
    host_cores = os.cpu_count() or 1
    cores = cores_per_task(cell, host_cores)
    addresses = [f"127.0.0.1:{p}" for p in free_ports(len(tasks))]
    missing = absent_worker(cell)
    for i, task in enumerate(tasks):
        if i != missing:
            env = {**cluster_env(cell, tasks, addresses, i, cores, options.platform), **isolated}
            launch = Launch(
                tuple(env.items()), task.role, i, cores, 1, is_oversubscribed(cell, cores, host_cores)
            )
            cluster.procs[i] = start_worker(
                Job(cell, options, launch, injected_fault()),
                folder,
                f"{name}-{task.type}{task.index}",
                cluster.deadline,
            )
