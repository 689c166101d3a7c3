"""TensorFlow's SlurmClusterResolver as :func:`harness.worker.slurm.resolve` runs it, in this process:
each Slurm task's place in the cluster (the child process that runs it for the parent:
tests/harness/launch/nodes/test_real_cluster.py)."""

from __future__ import annotations

import pytest

from harness.launch.cells.cluster import SLURM_PORT_BASE, ClusterConfig, slurm_jobs

pytestmark = pytest.mark.tf

PLACES = [
    ("0", 0, "worker", 0),
    ("3", 0, "worker", 3),
    ("0", 1, "chief", 0),
    ("1", 1, "ps", 0),
    ("3", 1, "worker", 1),
]
"""(SLURM_PROCID, parameter servers, the task's type and index) of 4 tasks on 2 nodes."""


@pytest.mark.parametrize("procid,ps,kind,index", PLACES)
def test_the_resolver_places_each_task(
    monkeypatch: pytest.MonkeyPatch, procid: str, ps: int, kind: str, index: int
) -> None:
    from harness.worker.slurm import resolve

    monkeypatch.setenv("SLURM_PROCID", procid)
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")
    monkeypatch.setenv("SLURM_STEP_NODELIST", "node[1-2]")
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)")
    answer = resolve(slurm_jobs(4, ps), 0, SLURM_PORT_BASE)
    assert "error" not in answer, answer["error"]
    # as harness.launch.nodes.real_cluster.resolve_slurm reads the child's line
    spec = tuple((k, tuple(addresses)) for k, addresses in answer["spec"])
    config = ClusterConfig(spec, answer["task_type"], answer["task_index"], answer["gpu_mask"])
    assert (config.task_type, config.task_index) == (kind, index)
    addresses = [a for _, group in config.spec for a in group]
    assert sorted(addresses) == ["node1:8888", "node1:8889", "node2:8888", "node2:8889"]
    assert config.gpu_mask is None and config.tasks_on_my_host == 2
    assert config.strategy == ("parameter_server" if ps else "multi_worker_mirrored")
