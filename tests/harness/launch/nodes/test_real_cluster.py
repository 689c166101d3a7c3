"""harness.cluster: TF_CONFIG parsing, roles and shapes (pure), and SlurmClusterResolver (TensorFlow)."""

from __future__ import annotations

import json

import pytest

from harness.errors import HarnessError
from harness.launch.cells.cluster import ClusterConfig, parse_tf_config, read_tf_config, slurm_jobs
from harness.launch.nodes.real_cluster import resolve_slurm


def _config(cluster: dict[str, list[str]], kind: str, index: int) -> ClusterConfig:
    return parse_tf_config(json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}}))


MWMS = {"worker": ["a:2222", "b:2222", "b:2223"]}
PS = {"chief": ["a:2222"], "worker": ["b:2222", "c:2222"], "ps": ["a:2223"]}


def test_multi_worker_mirrored_cluster_roles_and_shape() -> None:
    chief, peer = _config(MWMS, "worker", 0), _config(MWMS, "worker", 2)
    assert chief.strategy == "multi_worker_mirrored" and chief.workers == 3 and chief.ps == 0
    assert (chief.role, peer.role) == ("chief", "peer")
    assert chief.hosts == 2 and chief.tasks_on_my_host == 1 and peer.tasks_on_my_host == 2
    assert json.loads(peer.tf_config()) == {"cluster": MWMS, "task": {"type": "worker", "index": 2}}
    with_chief = _config({"chief": ["a:1"], "worker": ["b:1"]}, "chief", 0)
    assert with_chief.workers == 2 and with_chief.role == "chief"  # the chief trains too
    assert _config({"chief": ["a:1"], "worker": ["b:1"]}, "worker", 0).role == "peer"


def test_parameter_server_cluster_roles_and_shape() -> None:
    chief = _config(PS, "chief", 0)
    assert chief.strategy == "parameter_server" and chief.workers == 2 and chief.ps == 1
    assert chief.role == "chief" and _config(PS, "worker", 1).role == "server"
    assert _config(PS, "ps", 0).role == "server"
    assert chief.hosts == 2  # the workers' machines b and c
    assert chief.tasks_on_my_host == 2  # the chief shares host a with the ps task


@pytest.mark.parametrize(
    "text,words",
    [
        ("{", "not JSON"),
        ('{"task": {}}', 'no "cluster"'),
        ('{"cluster": {"evaluator": ["a:1"]}, "task": {"type": "evaluator"}}', "['evaluator']"),
        ('{"cluster": {"worker": []}, "task": {"type": "worker"}}', "non-empty list"),
        ('{"cluster": {"worker": ["nohost"]}, "task": {"type": "worker"}}', '"host:port"'),
        ('{"cluster": {"chief": ["a:1"]}, "task": {"type": "chief"}}', 'no "worker"'),
        ('{"cluster": {"worker": ["a:1"], "ps": ["a:2"]}, "task": {"type": "ps"}}', "no chief"),
        ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "ps"}}', "task is"),
        ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}', "expected 0..0"),
    ],
)
def test_bad_tf_config_names_the_problem(text: str, words: str) -> None:
    with pytest.raises(HarnessError, match="TF_CONFIG") as e:
        parse_tf_config(text)
    assert words in str(e.value)


def test_missing_tf_config_says_how_to_fix() -> None:
    with pytest.raises(HarnessError, match="--cluster local"):
        read_tf_config({})


def test_slurm_jobs() -> None:
    assert slurm_jobs(4, 0) == {"worker": 4}
    assert slurm_jobs(4, 1) == {"chief": 1, "ps": 1, "worker": 2}
    with pytest.raises(HarnessError, match="at least 3 Slurm tasks"):
        slurm_jobs(2, 1)


def test_slurm_outside_a_job_step_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(HarnessError, match="inside a Slurm job step"):
        resolve_slurm(0, 0)


# each place a child process importing TensorFlow (5 to 8 s on 2 cores): the default tier starts one;
# tests/harness/worker/test_slurm.py checks every place with the resolver in the test process
SLOW = pytest.mark.slow


@pytest.mark.process  # TensorFlow's resolver runs in a child process (harness.worker.slurm)
@pytest.mark.parametrize(
    "procid,ps,kind,index",
    [
        pytest.param("0", 0, "worker", 0, marks=SLOW),
        pytest.param("3", 0, "worker", 3, marks=SLOW),
        pytest.param("0", 1, "chief", 0, marks=SLOW),
        pytest.param("1", 1, "ps", 0, marks=SLOW),
        ("3", 1, "worker", 1),
    ],
)
def test_slurm_resolver_builds_the_cluster(
    monkeypatch: pytest.MonkeyPatch, procid: str, ps: int, kind: str, index: int
) -> None:
    monkeypatch.setenv("SLURM_PROCID", procid)
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")
    monkeypatch.setenv("SLURM_STEP_NODELIST", "node[1-2]")
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)")
    config = resolve_slurm(ps, 0)
    assert (config.task_type, config.task_index) == (kind, index)
    addresses = [a for _, group in config.spec for a in group]
    assert sorted(addresses) == ["node1:8888", "node1:8889", "node2:8888", "node2:8889"]
    assert config.gpu_mask is None and config.tasks_on_my_host == 2
    assert config.strategy == ("parameter_server" if ps else "multi_worker_mirrored")
