"""Which TensorFlow cluster this process belongs to: :class:`ClusterConfig`, read from
``TF_CONFIG`` (:func:`read_tf_config`) or from a Slurm job step's task counts
(:func:`slurm_jobs`, for :func:`harness.launch.nodes.real_cluster.resolve_slurm`). Pure except
:func:`read_tf_config`, which reads the environment."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
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
        return next(t.role for t in self.kind.layout(2, 1) if t.role != Role.CHIEF)

    @property
    def address(self) -> str:
        return self.jobs[self.task_type][self.task_index]

    @property
    def hosts(self) -> int:
        """Distinct machines among the tasks that train."""
        return len({host_of(a) for a in self._training()}) or 1

    @property
    def nodes(self) -> int:
        """Distinct machines among every task of the cluster (the chief and ps tasks included)."""
        return len({host_of(a) for addresses in self.jobs.values() for a in addresses})

    @property
    def placement(self) -> str:
        """Each task and its host: ``chief 0@node1, ps 0@node1, worker 0@node2``."""
        return ", ".join(
            f"{kind} {i}@{host_of(a)}" for kind, addresses in self.spec for i, a in enumerate(addresses)
        )

    @property
    def tasks_on_my_host(self) -> int:
        """Tasks of any type that share this task's machine (they share its cores)."""
        mine = host_of(self.address)
        return sum(1 for addresses in self.jobs.values() for a in addresses if host_of(a) == mine)

    def tf_config(self) -> str:
        """The TF_CONFIG of this task, as JSON."""
        return json.dumps(
            {
                "cluster": {k: list(v) for k, v in self.spec},
                "task": {"type": self.task_type, "index": self.task_index},
            }
        )


@dataclass(frozen=True)
class ClusterPlace:
    """Where a run's rows were measured: the nodes the whole cluster spanned (1 for a local run),
    each task's host (None locally), and the link from the chief to the slowest other node in
    Gbit/s, timed at the start of the run (None on one node)."""

    nodes: int = 1
    placement: str | None = None
    link_gbps: float | None = None


def host_of(address: str) -> str:
    """The host part of ``host:port``."""
    return address.rsplit(":", 1)[0]


def parse_tf_config(text: str) -> ClusterConfig:
    """A ClusterConfig from TF_CONFIG's JSON, or HarnessError naming what is wrong and what is expected."""
    example = (
        'expected JSON like {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
        '"task": {"type": "worker", "index": 0}}'
    )
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise HarnessError(f"TF_CONFIG is not JSON ({e}); {example}.") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise HarnessError(f'TF_CONFIG has no "cluster" object; {example}.')
    cluster: Mapping[str, Any] = config["cluster"]
    unknown = sorted(set(cluster) - set(TASK_TYPES))
    if unknown:
        raise HarnessError(
            f"TF_CONFIG cluster has task type(s) {unknown}; expected only {', '.join(TASK_TYPES)}."
        )
    for kind, addresses in cluster.items():
        if (
            not isinstance(addresses, list)
            or not addresses
            or not all(isinstance(a, str) and ":" in a for a in addresses)
        ):
            raise HarnessError(
                f"TF_CONFIG cluster[{kind!r}] is {addresses!r}; expected a non-empty list "
                'of "host:port" strings.'
            )
    if "worker" not in cluster:
        raise HarnessError(f'TF_CONFIG cluster has no "worker" list; {example}.')
    if "ps" in cluster and "chief" not in cluster:
        raise HarnessError(
            "TF_CONFIG has ps tasks but no chief: a parameter-server cluster needs "
            'one "chief" task (the coordinator), workers and ps tasks.'
        )
    if len(cluster.get("chief", ())) > 1:
        raise HarnessError(f"TF_CONFIG lists {len(cluster['chief'])} chiefs; expected at most 1.")
    task = config.get("task")
    if not isinstance(task, dict) or task.get("type") not in cluster:
        raise HarnessError(
            f'TF_CONFIG task is {task!r}; expected {{"type": one of {", ".join(cluster)}, "index": ...}}.'
        )
    index = task.get("index", 0)
    if not isinstance(index, int) or not 0 <= index < len(cluster[task["type"]]):
        raise HarnessError(
            f"TF_CONFIG task index is {index!r}; expected 0..{len(cluster[task['type']]) - 1} "
            f"for the {len(cluster[task['type']])} {task['type']} task(s)."
        )
    spec = tuple((k, tuple(cluster[k])) for k in TASK_TYPES if k in cluster)
    return ClusterConfig(spec, task["type"], index)


def read_tf_config(environ: Mapping[str, str] | None = None) -> ClusterConfig:
    """This process's cluster from the ``TF_CONFIG`` environment variable."""
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG")
    if not text:
        raise HarnessError(
            "--cluster tf_config needs the TF_CONFIG environment variable, set by the "
            "scheduler for each process; it is not set. Use --cluster local to run "
            "every process on this machine."
        )
    return parse_tf_config(text)


def slurm_jobs(tasks: int, ps: int) -> dict[str, int]:
    """Task counts for SlurmClusterResolver: ``tasks`` Slurm tasks as workers, or with ``ps`` > 0 a
    chief, ``ps`` ps tasks and the rest workers (the resolver gives ranks to job names in sorted
    order, so rank 0 is the chief)."""
    if ps <= 0:
        return {"worker": tasks}
    if tasks < ps + 2:
        raise HarnessError(
            f"--ps {ps} needs at least {ps + 2} Slurm tasks (a chief, {ps} ps and a "
            f"worker); this job step has {tasks}."
        )
    return {"chief": 1, "ps": ps, "worker": tasks - 1 - ps}
