"""Real clusters: which TensorFlow cluster this process belongs to, and its part in a run.

With ``--cluster tf_config`` every process of the job is started by the user's scheduler with its own
``TF_CONFIG``; with ``--cluster slurm`` TensorFlow's own ``SlurmClusterResolver`` builds the cluster
from the Slurm job step. Either way the result is a :class:`ClusterConfig`, and every process runs
the same cells in the same order, each cell in a fresh worker process joined to the same addresses.

Roles (:attr:`ClusterConfig.role`):

- **chief**: the ``chief`` task, or worker 0 when there is none: runs every cell and is the only
  process that writes results;
- **peer**: another MultiWorkerMirrored worker: runs every cell and writes nothing;
- **server**: a parameter-server cluster's workers and ps tasks: one ``tf.distribute.Server`` for the
  whole run, which the chief's coordinator of each cell drives. It runs until the chief's run is
  over, which it learns from the chief's run lease (:mod:`harness.launch.lease`), and exits 0.

Everything here is pure except :func:`read_tf_config` and :func:`resolve_slurm`, which read the
environment (and, for Slurm, TensorFlow's resolver in a child process).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import EXIT_FAILURE, HarnessError
from harness.launch.contract import Job, Launch, WorkerOptions, injected_fault
from harness.launch.process import (
    POLL_S,
    Deadline,
    Phase,
    Process,
    signal_text,
    start_worker,
)
from harness.launch.single import run_worker
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.spec.strategies import Role, Strategy, cluster_strategy

CLUSTER_CHOICES = ("local", "tf_config", "slurm")
"""local: the harness starts every process on 127.0.0.1; tf_config / slurm: the scheduler does."""

TASK_TYPES = ("chief", "worker", "ps")

SLURM_PORT_BASE = 8888


@dataclass(frozen=True)
class ClusterConfig:
    """One process's view of its cluster: every task type's addresses (``host:port``) and its own
    task. ``gpu_mask``: the CUDA/HIP_VISIBLE_DEVICES this task must use (None: as inherited)."""

    spec: tuple[tuple[str, tuple[str, ...]], ...]
    task_type: str
    task_index: int
    gpu_mask: str | None = None

    @property
    def jobs(self) -> dict[str, tuple[str, ...]]:
        return dict(self.spec)

    @property
    def kind(self) -> Strategy:
        """The only multi-worker strategy this cluster can run: a ps job means parameter_server."""
        return cluster_strategy(tuple(self.jobs))

    @property
    def strategy(self) -> str:
        return self.kind.name

    def _training(self) -> list[str]:
        """Addresses of the tasks that train (a MultiWorkerMirrored chief trains, a coordinator not)."""
        return [a for t in self.kind.training_tasks for a in self.jobs.get(t, ())]

    @property
    def workers(self) -> int:
        """Tasks that train: the workers, plus a chief where the chief trains."""
        return len(self._training())

    @property
    def ps(self) -> int:
        return len(self.jobs.get("ps", ()))

    @property
    def chief_task(self) -> tuple[str, int]:
        """(task type, index) of the chief: the ``chief`` task, or worker 0 when there is none."""
        return ("chief", 0) if "chief" in self.jobs else ("worker", 0)

    @property
    def role(self) -> Role:
        """chief (the chief task, or worker 0 without one), else what the strategy's other tasks are."""
        if (self.task_type, self.task_index) == self.chief_task:
            return Role.CHIEF
        return next(t.role for t in self.kind.tasks(2, 1) if t.role != Role.CHIEF)

    @property
    def address(self) -> str:
        return self.jobs[self.task_type][self.task_index]

    @property
    def hosts(self) -> int:
        """Distinct machines among the tasks that train."""
        return len({host_of(a) for a in self._training()}) or 1

    @property
    def tasks_on_my_host(self) -> int:
        """Tasks of any type that share this task's machine (they share its cores)."""
        mine = host_of(self.address)
        return sum(1 for addresses in self.jobs.values() for a in addresses if host_of(a) == mine)

    def tf_config(self) -> str:
        """The TF_CONFIG of this task, as JSON."""
        return json.dumps({"cluster": {k: list(v) for k, v in self.spec},
                           "task": {"type": self.task_type, "index": self.task_index}})


def host_of(address: str) -> str:
    """The host part of ``host:port``."""
    return address.rsplit(":", 1)[0]


def parse_tf_config(text: str) -> ClusterConfig:
    """A ClusterConfig from TF_CONFIG's JSON, or HarnessError naming what is wrong and what is expected."""
    example = ('expected JSON like {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
               '"task": {"type": "worker", "index": 0}}')
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise HarnessError(f"TF_CONFIG is not JSON ({e}); {example}.") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise HarnessError(f"TF_CONFIG has no \"cluster\" object; {example}.")
    cluster: Mapping[str, Any] = config["cluster"]
    unknown = sorted(set(cluster) - set(TASK_TYPES))
    if unknown:
        raise HarnessError(f"TF_CONFIG cluster has task type(s) {unknown}; expected only "
                        f"{', '.join(TASK_TYPES)}.")
    for kind, addresses in cluster.items():
        if (not isinstance(addresses, list) or not addresses
                or not all(isinstance(a, str) and ":" in a for a in addresses)):
            raise HarnessError(f"TF_CONFIG cluster[{kind!r}] is {addresses!r}; expected a non-empty list "
                            "of \"host:port\" strings.")
    if "worker" not in cluster:
        raise HarnessError(f"TF_CONFIG cluster has no \"worker\" list; {example}.")
    if "ps" in cluster and "chief" not in cluster:
        raise HarnessError("TF_CONFIG has ps tasks but no chief: a parameter-server cluster needs "
                        "one \"chief\" task (the coordinator), workers and ps tasks.")
    if len(cluster.get("chief", ())) > 1:
        raise HarnessError(f"TF_CONFIG lists {len(cluster['chief'])} chiefs; expected at most 1.")
    task = config.get("task")
    if not isinstance(task, dict) or task.get("type") not in cluster:
        raise HarnessError(f"TF_CONFIG task is {task!r}; expected {{\"type\": one of "
                        f"{', '.join(cluster)}, \"index\": ...}}.")
    index = task.get("index", 0)
    if not isinstance(index, int) or not 0 <= index < len(cluster[task["type"]]):
        raise HarnessError(f"TF_CONFIG task index is {index!r}; expected 0..{len(cluster[task['type']]) - 1} "
                        f"for the {len(cluster[task['type']])} {task['type']} task(s).")
    spec = tuple((k, tuple(cluster[k])) for k in TASK_TYPES if k in cluster)
    return ClusterConfig(spec, task["type"], index)


def read_tf_config(environ: Mapping[str, str] | None = None) -> ClusterConfig:
    """This process's cluster from the ``TF_CONFIG`` environment variable."""
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG")
    if not text:
        raise HarnessError("--cluster tf_config needs the TF_CONFIG environment variable, set by the "
                        "scheduler for each process; it is not set. Use --cluster local to run "
                        "every process on this machine.")
    return parse_tf_config(text)


def slurm_jobs(tasks: int, ps: int) -> dict[str, int]:
    """Task counts for SlurmClusterResolver: ``tasks`` Slurm tasks as workers, or with ``ps`` > 0 a
    chief, ``ps`` ps tasks and the rest workers (the resolver gives ranks to job names in sorted
    order, so rank 0 is the chief)."""
    if ps <= 0:
        return {"worker": tasks}
    if tasks < ps + 2:
        raise HarnessError(f"--ps {ps} needs at least {ps + 2} Slurm tasks (a chief, {ps} ps and a "
                        f"worker); this job step has {tasks}.")
    return {"chief": 1, "ps": ps, "worker": tasks - 1 - ps}


RESOLVER_TIMEOUT_S = 180.0
"""Seconds the resolver's child process may take (it imports TensorFlow)."""


def resolve_slurm(ps: int, gpus_per_node: int, port_base: int = SLURM_PORT_BASE) -> ClusterConfig:
    """This process's cluster from the Slurm job step, through TensorFlow's SlurmClusterResolver
    (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE), run in a
    child process (:mod:`harness.worker.slurm`). Tasks on a node get ports ``port_base``,
    ``port_base + 1``, ...; with GPUs, the resolver's GPU split."""
    missing = [v for v in ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
                           "SLURM_STEP_TASKS_PER_NODE") if v not in os.environ]
    if missing:
        raise HarnessError(f"--cluster slurm must run inside a Slurm job step (srun); "
                           f"{', '.join(missing)} not set.")
    jobs = slurm_jobs(int(os.environ["SLURM_STEP_NUM_TASKS"]), ps)
    with tempfile.TemporaryDirectory(prefix="harness-slurm-") as tmpdir:
        folder = Path(tmpdir)
        proc = Process(["-m", "harness.worker.slurm", json.dumps(jobs), str(gpus_per_node), str(port_base)],
                       {}, folder / "resolver.log", folder / "resolver.jsonl", events_on_stdout=True,
                       deadline=Deadline(Phase.STARTUP, RESOLVER_TIMEOUT_S))
        how = "already exited" if proc.wait(RESOLVER_TIMEOUT_S) is not None else proc.stop()
        found = proc.read()
        if not found:
            raise HarnessError("SlurmClusterResolver could not run: " + proc.failure(how, "resolver"),
                               EXIT_FAILURE)
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
    between the tasks on this host, and its device mask (the Slurm resolver's GPU split; none for a
    parameter-server coordinator or ps task, or a CPU run; else as inherited from the scheduler)."""
    cores = max(1, host_cores // config.tasks_on_my_host)
    env = {"TF_CONFIG": config.tf_config(), "TF_NUM_INTRAOP_THREADS": str(cores),
           "OMP_NUM_THREADS": str(cores)}
    mask = config.gpu_mask
    if platform.device_kind != "gpu" or config.task_type not in config.kind.training_tasks:
        mask = "-1"
    if mask is not None:
        env.update(CUDA_VISIBLE_DEVICES=mask, HIP_VISIBLE_DEVICES=mask)
    position = [(t, i) for t, addresses in config.spec for i in range(len(addresses))].index(
        (config.task_type, config.task_index))
    return Launch(tuple(env.items()), config.role, position, cores, config.hosts,
                  cores * config.tasks_on_my_host > host_cores)


def run_cluster_task(cell: Cell, options: WorkerOptions, name: str, config: ClusterConfig
                     ) -> Iterator[dict[str, Any]]:
    """This task's part of a cell on a real cluster: one worker process joined to the cluster in
    ``config``, with the start-up, rendezvous and cell deadlines of :func:`run_worker`."""
    launch = task_launch(config, options.platform, os.cpu_count() or 1)
    return run_worker(cell, options, name, launch, joins=True)


@dataclass(frozen=True)
class ServerEnd:
    """How a server task ended. ``code``: this task's exit code (0 once the chief's run finished;
    1 when the server process exited by itself or the chief was lost); ``detail``: one sentence."""

    code: int
    detail: str


def serve_cluster_task(cell: Cell, options: WorkerOptions, config: ClusterConfig) -> ServerEnd:
    """A parameter-server cluster's worker or ps task: one ``tf.distribute.Server`` for the whole
    run (``cell`` only names the job), until the chief's run is over (the chief's run lease:
    :func:`harness.launch.lease.wait_for_chief`). Then the server process is stopped (SIGTERM,
    SIGKILL after ``KILL_GRACE_S``) and the task ends with 0, or 1 when the chief was lost or never
    reached. A server process that exits by itself ends the task with 1. Stops the server when this
    process is interrupted (SIGTERM or Ctrl-C)."""
    from harness.launch.lease import ChiefEnd, wait_for_chief

    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        launch = task_launch(config, options.platform, os.cpu_count() or 1)
        proc = start_worker(Job(cell, options, launch, injected_fault()), Path(tmpdir),
                            f"{config.task_type}{config.task_index}")
        ended: list[ChiefEnd] = []
        threading.Thread(target=lambda: ended.append(wait_for_chief(config)), name="chief-lease",
                         daemon=True).start()
        try:
            while proc.running and not ended:
                time.sleep(POLL_S)
        finally:
            how = proc.stop()
        if not ended:
            return ServerEnd(1, f"the server process exited with {signal_text(proc.returncode or 0)} "
                                f"before the chief's run ended; its log {proc.log_path}: {proc.tail()}")
        chief = ended[0]
        return ServerEnd(0 if chief.finished else 1, f"{chief.detail}; server stopped with {how}")


def cluster_launcher(config: ClusterConfig) -> Callable[[Cell, WorkerOptions, str],
                                                         Iterator[dict[str, Any]]]:
    """The launcher of this task's part of every cell (see :data:`harness.launch.runner.Launcher`)."""
    return lambda cell, options, name: run_cluster_task(cell, options, name, config)
