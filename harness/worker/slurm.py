"""``python -m harness.worker.slurm PS GPUS_PER_NODE PORT_BASE``: this Slurm task's cluster, from
TensorFlow's own ``SlurmClusterResolver``, printed as one JSON line (the parent never imports
TensorFlow; :func:`harness.launch.nodes.real_cluster.resolve_slurm` runs this).

The line is ``{"spec": [[type, [addresses]], ...], "task_type", "task_index", "gpu_mask"}``, or
``{"error": "..."}`` when the resolver refuses the job step."""

from __future__ import annotations

import json
import os
import sys
from typing import TypedDict

TASK_TYPES = ("chief", "worker", "ps")
CPU_NODE_TASK_SLOTS = 1024
"""Most tasks per CPU-only node the Slurm path supports."""


class Resolved(TypedDict, total=False):
    """The printed line (the module doc): the cluster as (task type, addresses) pairs, this task's
    type and index, its GPU mask (None: no mask); or only ``error``."""

    spec: list[tuple[str, list[str]]]
    task_type: str
    task_index: int
    gpu_mask: str | None
    error: str


def resolve(jobs: dict[str, int], gpus_per_node: int, port_base: int) -> Resolved:
    """The resolver's cluster for ``jobs`` (task counts by type); tasks on a node get ports
    ``port_base``, ``port_base + 1``, ...; with GPUs, the resolver's GPU split as the mask."""
    from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import SlurmClusterResolver

    gpus: dict[str, int | bool] = {"gpus_per_node": gpus_per_node, "auto_set_gpu": True}
    if gpus_per_node == 0:
        # The resolver hands out ports while handing out GPUs: with none it fails on CPU nodes
        # (range() step 0). Give it one notional GPU per task, and set no mask from it.
        gpus = {"gpus_per_node": CPU_NODE_TASK_SLOTS, "gpus_per_task": 1, "auto_set_gpu": False}
    try:
        resolver = SlurmClusterResolver(jobs=jobs, port_base=port_base, **gpus)
        spec = resolver.cluster_spec().as_dict()
    except RuntimeError as e:
        return {"error": f"SlurmClusterResolver: {e}"}
    return {
        "spec": [(k, list(spec[k])) for k in TASK_TYPES if k in spec],
        "task_type": resolver.task_type,
        "task_index": resolver.task_id,
        "gpu_mask": os.environ.get("CUDA_VISIBLE_DEVICES") if gpus_per_node > 0 else None,
    }


def main(argv: list[str]) -> int:
    jobs, gpus_per_node, port_base = json.loads(argv[0]), int(argv[1]), int(argv[2])
    print(json.dumps(resolve(jobs, gpus_per_node, port_base)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
