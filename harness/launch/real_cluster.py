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
  whole run, which the chief's coordinator of each cell drives. It runs until the scheduler stops it
  (``srun --wait``, Kubeflow's success policy; see the README).

Everything here is pure except :func:`read_tf_config` and :func:`resolve_slurm`, which read the
environment (and, for Slurm, TensorFlow's resolver).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import SpecError
from harness.launch.contract import Launch, WorkerOptions
from harness.launch.process import _start, stop
from harness.launch.single import run_worker
from harness.spec.axes import PARAMETER_SERVER
from harness.spec.cell import Cell
from harness.spec.protocol import Platform

CLUSTER_CHOICES = ("local", "tf_config", "slurm")
"""local: the harness starts every process on 127.0.0.1; tf_config / slurm: the scheduler does."""


TASK_TYPES = ("chief", "worker", "ps")


SLURM_PORT_BASE = 8888


CPU_NODE_TASK_SLOTS = 1024
"""Most tasks per CPU-only node the Slurm path supports (see :func:`resolve_slurm`)."""


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
    def strategy(self) -> str:
        """The only multi-worker strategy this cluster can run: a ps job means parameter_server."""
        return PARAMETER_SERVER if self.jobs.get("ps") else "multi_worker_mirrored"

    @property
    def workers(self) -> int:
        """Tasks that train: the workers, plus a chief under MultiWorkerMirrored (which trains)."""
        jobs = self.jobs
        chief = len(jobs.get("chief", ())) if self.strategy != PARAMETER_SERVER else 0
        return len(jobs.get("worker", ())) + chief

    @property
    def ps(self) -> int:
        return len(self.jobs.get("ps", ()))

    @property
    def role(self) -> str:
        """chief, peer or server (see the module docstring)."""
        jobs = self.jobs
        chief = ("chief", 0) if "chief" in jobs else ("worker", 0)
        if (self.task_type, self.task_index) == chief:
            return "chief"
        return "server" if self.strategy == PARAMETER_SERVER else "peer"

    @property
    def address(self) -> str:
        return self.jobs[self.task_type][self.task_index]

    @property
    def hosts(self) -> int:
        """Distinct machines among the tasks that train."""
        jobs = self.jobs
        training = [*jobs.get("worker", ())] + ([] if self.strategy == PARAMETER_SERVER
                                                else [*jobs.get("chief", ())])
        return len({_host(a) for a in training}) or 1

    @property
    def tasks_on_my_host(self) -> int:
        """Tasks of any type that share this task's machine (they share its cores)."""
        mine = _host(self.address)
        return sum(1 for addresses in self.jobs.values() for a in addresses if _host(a) == mine)

    def tf_config(self) -> str:
        """The TF_CONFIG of this task, as JSON."""
        return json.dumps({"cluster": {k: list(v) for k, v in self.spec},
                           "task": {"type": self.task_type, "index": self.task_index}})


def _host(address: str) -> str:
    return address.rsplit(":", 1)[0]


def parse_tf_config(text: str) -> ClusterConfig:
    """A ClusterConfig from TF_CONFIG's JSON, or SpecError naming what is wrong and what is expected."""
    example = ('expected JSON like {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
               '"task": {"type": "worker", "index": 0}}')
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise SpecError(f"TF_CONFIG is not JSON ({e}); {example}.") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise SpecError(f"TF_CONFIG has no \"cluster\" object; {example}.")
    cluster: Mapping[str, Any] = config["cluster"]
    unknown = sorted(set(cluster) - set(TASK_TYPES))
    if unknown:
        raise SpecError(f"TF_CONFIG cluster has task type(s) {unknown}; expected only "
                        f"{', '.join(TASK_TYPES)}.")
    for kind, addresses in cluster.items():
        if (not isinstance(addresses, list) or not addresses
                or not all(isinstance(a, str) and ":" in a for a in addresses)):
            raise SpecError(f"TF_CONFIG cluster[{kind!r}] is {addresses!r}; expected a non-empty list "
                            "of \"host:port\" strings.")
    if "worker" not in cluster:
        raise SpecError(f"TF_CONFIG cluster has no \"worker\" list; {example}.")
    if "ps" in cluster and "chief" not in cluster:
        raise SpecError("TF_CONFIG has ps tasks but no chief: a parameter-server cluster needs "
                        "one \"chief\" task (the coordinator), workers and ps tasks.")
    if len(cluster.get("chief", ())) > 1:
        raise SpecError(f"TF_CONFIG lists {len(cluster['chief'])} chiefs; expected at most 1.")
    task = config.get("task")
    if not isinstance(task, dict) or task.get("type") not in cluster:
        raise SpecError(f"TF_CONFIG task is {task!r}; expected {{\"type\": one of "
                        f"{', '.join(cluster)}, \"index\": ...}}.")
    index = task.get("index", 0)
    if not isinstance(index, int) or not 0 <= index < len(cluster[task["type"]]):
        raise SpecError(f"TF_CONFIG task index is {index!r}; expected 0..{len(cluster[task['type']]) - 1} "
                        f"for the {len(cluster[task['type']])} {task['type']} task(s).")
    spec = tuple((k, tuple(cluster[k])) for k in TASK_TYPES if k in cluster)
    return ClusterConfig(spec, task["type"], index)


def read_tf_config(environ: Mapping[str, str] | None = None) -> ClusterConfig:
    """This process's cluster from the ``TF_CONFIG`` environment variable."""
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG")
    if not text:
        raise SpecError("--cluster tf_config needs the TF_CONFIG environment variable, set by the "
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
        raise SpecError(f"--ps {ps} needs at least {ps + 2} Slurm tasks (a chief, {ps} ps and a "
                        f"worker); this job step has {tasks}.")
    return {"chief": 1, "ps": ps, "worker": tasks - 1 - ps}


def resolve_slurm(ps: int, gpus_per_node: int, port_base: int = SLURM_PORT_BASE) -> ClusterConfig:
    """This process's cluster from the Slurm job step, through TensorFlow's SlurmClusterResolver
    (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE). Tasks on a
    node get ports ``port_base``, ``port_base + 1``, ...; with GPUs, the resolver's GPU split."""
    missing = [v for v in ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
                           "SLURM_STEP_TASKS_PER_NODE") if v not in os.environ]
    if missing:
        raise SpecError(f"--cluster slurm must run inside a Slurm job step (srun); "
                        f"{', '.join(missing)} not set.")
    from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import (
        SlurmClusterResolver,
    )

    jobs = slurm_jobs(int(os.environ["SLURM_STEP_NUM_TASKS"]), ps)
    gpus = {"gpus_per_node": gpus_per_node, "auto_set_gpu": True}
    if gpus_per_node == 0:
        # The resolver hands out ports while handing out GPUs: with none it fails on CPU nodes
        # (range() step 0). Give it one notional GPU per task, and set no mask from it.
        gpus = {"gpus_per_node": CPU_NODE_TASK_SLOTS, "gpus_per_task": 1, "auto_set_gpu": False}
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        resolver = SlurmClusterResolver(jobs=jobs, port_base=port_base, **gpus)
        spec = resolver.cluster_spec().as_dict()
        mask = os.environ.get("CUDA_VISIBLE_DEVICES") if gpus_per_node > 0 else None
    except RuntimeError as e:
        raise SpecError(f"SlurmClusterResolver: {e}") from None
    finally:
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before
    ordered = tuple((k, tuple(spec[k])) for k in TASK_TYPES if k in spec)
    return ClusterConfig(ordered, resolver.task_type, resolver.task_id, mask)


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
    if platform.device_kind != "gpu" or (config.ps and config.task_type in ("chief", "ps")):
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


def serve_cluster_task(cell: Cell, options: WorkerOptions, config: ClusterConfig) -> int:
    """A parameter-server cluster's worker or ps task: one ``tf.distribute.Server`` for the whole
    run (``cell`` only names the job). Returns the server's exit code once it exits; stops it when
    this process is interrupted (SIGTERM or Ctrl-C)."""
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        launch = task_launch(config, options.platform, os.cpu_count() or 1)
        proc, _, _ = _start(cell, options, f"{config.task_type}{config.task_index}", Path(tmpdir),
                            launch)
        try:
            return proc.wait()
        finally:
            stop(proc)
