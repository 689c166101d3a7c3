"""Multi-worker cells on 127.0.0.1: TensorFlow's own cluster runtime (TF_CONFIG, gRPC collectives),
one local process per task, with phases and deadlines.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.launch.contract import Launch, WorkerOptions, injected_fault
from harness.launch.process import POLL_S, _Events, _signal_name, _start, _tail, stop
from harness.spec.axes import PARAMETER_SERVER
from harness.spec.cell import Cell
from harness.spec.protocol import Platform

# ------------------------------------------------------------------------------------------------
# Multi-worker cells on 127.0.0.1: TensorFlow's own cluster runtime (TF_CONFIG, gRPC collectives)
# ------------------------------------------------------------------------------------------------

FINISH_GRACE_S = 30.0


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (held open together while chosen)."""
    import socket

    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


@dataclass(frozen=True)
class Task:
    """One process of a multi-worker cell: its TF_CONFIG task and its part in the harness.

    ``role``: chief (runs the cell, reports the row), peer (runs the cell: a MultiWorkerMirrored
    worker other than the chief) or server (a parameter-server cell's worker or ps task: a
    ``tf.distribute.Server`` the chief's ClusterCoordinator drives)."""

    type: str
    index: int
    role: str

    @property
    def label(self) -> str:
        name = self.type if self.type == "chief" else f"{self.type} {self.index}"
        return name + (" (chief)" if self.role == "chief" and self.type != "chief" else "")

    @property
    def computes(self) -> bool:
        """Whether this task runs training steps (and so gets cores and devices)."""
        return self.type == "worker"


def cluster_tasks(cell: Cell) -> list[Task]:
    """The processes of a multi-worker cell, chief first. MultiWorkerMirrored: ``workers`` workers,
    worker 0 the chief. Parameter server: a chief (the coordinator), the workers and the ps tasks."""
    if cell.strategy == PARAMETER_SERVER:
        return ([Task("chief", 0, "chief")] + [Task("worker", i, "server") for i in range(cell.workers)]
                + [Task("ps", j, "server") for j in range(cell.ps)])
    return [Task("worker", i, "chief" if i == 0 else "peer") for i in range(cell.workers)]


def cluster_spec(tasks: list[Task], addresses: list[str]) -> dict[str, list[str]]:
    """TF_CONFIG's ``cluster``: each task type's addresses, in task-index order."""
    spec: dict[str, list[str]] = {}
    for task, address in zip(tasks, addresses):
        spec.setdefault(task.type, []).append(address)
    return spec


def cores_per_task(cell: Cell, host_cores: int) -> int:
    """Threads for each worker (and ps task) of a local cell: the host's cores split evenly
    between the processes that compute or apply updates (never below 1)."""
    return max(1, host_cores // (cell.workers + cell.ps))


def is_oversubscribed(cell: Cell, cores: int, host_cores: int) -> bool:
    """Whether the cell's workers and ps tasks together ask for more cores than the host has
    (the parameter-server coordinator, which mostly waits, is not counted)."""
    return cores * (cell.workers + cell.ps) > host_cores


def cluster_env(tasks: list[Task], addresses: list[str], position: int, cores: int,
                platform: Platform, replicas: int) -> dict[str, str]:
    """Environment of local task ``tasks[position]``: TF_CONFIG, its thread counts, its device mask
    (compute task c gets GPUs c*replicas .. c*replicas + replicas - 1; other tasks none)."""
    task = tasks[position]
    env = {
        "TF_CONFIG": json.dumps({"cluster": cluster_spec(tasks, addresses),
                                 "task": {"type": task.type, "index": task.index}}),
        "TF_NUM_INTRAOP_THREADS": str(cores), "OMP_NUM_THREADS": str(cores),
    }
    compute = [t for t in tasks if t.computes].index(task) if task.computes else None
    mask = "-1"  # no GPU for a CPU cell (even on a GPU machine), a coordinator or a ps task
    if platform.device_kind == "gpu" and compute is not None:
        mask = ",".join(str(compute * replicas + r) for r in range(replicas))
    env.update(CUDA_VISIBLE_DEVICES=mask, HIP_VISIBLE_DEVICES=mask)
    return env


def absent_worker(cell: Cell) -> int | None:
    """Test hook ``absent@N:<cell_id>``: task N of :func:`cluster_tasks` is never started (a peer
    that never appears)."""
    fault = injected_fault() or ""
    kind, _, target = fault.partition(":")
    if target == cell.id and kind.startswith("absent@"):
        return int(kind.split("@")[1])
    return None


def run_cluster(cell: Cell, options: WorkerOptions, name: str = "cell") -> Iterator[dict[str, Any]]:
    """Run a multi-worker cell as local processes (:func:`cluster_tasks`); yield the chief's events.

    Phases and deadlines: start-up (``startup_timeout_s``), rendezvous
    (``protocol.rendezvous_timeout_s``, until every task has joined: MultiWorkerMirroredStrategy's
    constructor waits for its peers forever, so the deadline is the launcher's), the cell
    (``protocol.cell_timeout_s``), then ``FINISH_GRACE_S`` for the peers to exit (servers are
    stopped as soon as the chief has its row). A task that dies (a server that exits at all), or any
    phase that overruns, stops every task (SIGTERM, then SIGKILL) and yields one ``failed`` event
    naming the task, the phase and the cause. Ports are released with the processes.
    """
    tasks = cluster_tasks(cell)
    host_cores = os.cpu_count() or 1
    cores = cores_per_task(cell, host_cores)
    addresses = [f"127.0.0.1:{p}" for p in free_ports(len(tasks))]
    missing = absent_worker(cell)
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        procs: dict[int, tuple[subprocess.Popen[bytes], _Events, Path]] = {}
        facts: dict[str, Any] | None = None
        seen: dict[int, set[str]] = {i: set() for i in range(len(tasks))}
        recorded = False
        phase, limit = "start-up (import TensorFlow, set up devices)", options.startup_timeout_s
        deadline = time.monotonic() + limit
        culprit = ""
        try:
            for i, task in enumerate(tasks):
                if i != missing:
                    env = cluster_env(tasks, addresses, i, cores, options.platform, cell.replicas)
                    launch = Launch(tuple(env.items()), task.role, i, cores, 1,
                                    is_oversubscribed(cell, cores, host_cores))
                    procs[i] = _start(cell, options, f"{name}-{task.type}{task.index}", Path(tmpdir),
                                      launch)

            def drain() -> Iterator[dict[str, Any]]:
                nonlocal facts, recorded
                for i, (_, events, _) in procs.items():
                    for ev in events.read():
                        seen[i].add(ev["event"])
                        if i != 0:  # only the chief's events reach the caller
                            continue
                        if ev["event"] == "ready":
                            facts = ev["facts"]
                        if ev["event"] == "record":
                            recorded = True
                        if ev["event"] in ("start", "record"):
                            yield {**ev, "facts": facts}

            def failed(i: int) -> bool:
                """Task i exited when it must not have: with an error, or a server at all."""
                proc = procs[i][0]
                if proc.poll() is None:
                    return False
                return proc.returncode != 0 or (tasks[i].role == "server" and not recorded)

            while True:
                yield from drain()
                everyone = range(len(tasks))
                if phase.startswith("start-up") and all("start" in seen[i] for i in procs):
                    phase = "rendezvous (every task joining the cluster)"
                    limit = options.protocol.rendezvous_timeout_s
                    deadline = time.monotonic() + limit
                if phase.startswith("rendezvous") and all("joined" in seen[i] for i in everyone):
                    phase, limit = f"cell {cell.id}", options.protocol.cell_timeout_s
                    deadline = time.monotonic() + limit
                if recorded and phase.startswith("cell"):
                    phase, limit = "shutdown", FINISH_GRACE_S
                    deadline = time.monotonic() + limit
                dead = [i for i in procs if failed(i)]
                if dead:
                    i = dead[0]
                    culprit = (f"{tasks[i].label} exited with {_signal_name(procs[i][0].returncode)} "
                               f"during {phase}; its log {procs[i][2]}: {_tail(procs[i][2])}")
                    break
                running = [i for i, (p, _, _) in procs.items() if p.poll() is None]
                if all(tasks[i].role == "server" for i in running) and (recorded or not running):
                    culprit = "" if recorded else f"every task exited without a record during {phase}"
                    break
                if time.monotonic() > deadline:
                    culprit = f"deadline passed: {phase} took over {limit:g} s"
                    absent = [tasks[i].label for i in everyone if i not in procs or "start" not in seen[i]]
                    waiting = [tasks[i].label for i in procs if "joined" not in seen[i]]
                    if absent:
                        culprit += f" ({', '.join(absent)} not there)"
                    elif phase.startswith("rendezvous") and waiting:
                        culprit += f" ({', '.join(waiting)} never joined)"
                    break
                time.sleep(POLL_S)
        finally:
            hows = {i: stop(p) for i, (p, _, _) in procs.items()}
        yield from drain()
        if recorded:
            return
        if culprit.startswith("deadline"):
            culprit += "; stopped with " + ", ".join(f"{tasks[i].label}: {h}" for i, h in hows.items())
        yield {"event": "failed", "cell_id": cell.id, "facts": facts,
               "reason": culprit or "the chief exited without a record"}
