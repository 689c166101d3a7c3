"""What the scheduler says about a cluster's tasks (:mod:`harness.launch.nodes.scheduler`): pure, with a
fake ``scontrol``."""

from __future__ import annotations

import pytest

from harness.launch.nodes import scheduler
from harness.launch.nodes.scheduler import (
    QUIET,
    Seen,
    SlurmWatch,
    join_overdue,
    node_down,
    state_of,
    watch_of,
)

STEP = "JobId=7 StepId=0 StepName=python State=RUNNING Partition=nodes NodeList=node[1-2] Nodes=2 Tasks=2"
NODE2 = "NodeName=node2 Arch=x86_64 CoresPerSocket=1 State={} ThreadsPerCore=1"


def test_a_task_that_never_joins_is_lost_30_s_after_it_is_seen_running_or_once_its_node_is_down() -> None:
    seen = Seen(100.0, "Slurm reporting its job step 7.0 running")
    assert join_overdue(129.0, 0.0, seen, 300) is None
    assert join_overdue(130.5, 0.0, seen, 300) == (
        "it never joined the chief's run lease within 30 s of Slurm reporting its job step 7.0 running"
    )
    down = Seen(100.0, "Slurm reports node2 down", 0.0)
    assert (
        join_overdue(100.0, 0.0, down, 300)
        == "it never joined the chief's run lease; Slurm reports node2 down"
    )
    assert join_overdue(299.0, 0.0, None, 300) is None  # not known to run: a slow start, not a loss
    assert join_overdue(300.5, 0.0, None, 300) == "it never joined the chief's run lease within 300 s"


@pytest.mark.parametrize(
    "state, down",
    [("IDLE", False), ("MIXED", False), ("ALLOCATED+DRAIN", False), ("DOWN*", True), ("IDLE*", True)]
    + [("DOWN+NOT_RESPONDING", True), ("FAIL", True), ("MIXED+FAIL", True)],
)
def test_node_states(state: str, down: bool) -> None:
    assert node_down(state) is down
    assert node_down(state_of((0, NODE2.format(state)))) is down


def test_step_answers() -> None:
    assert state_of((0, STEP)) == "RUNNING"
    assert state_of((0, STEP.replace("RUNNING", "CANCELLED"))) == "CANCELLED"
    assert state_of((1, "scontrol: error: Invalid job id specified")) == "gone"
    assert (
        state_of((1, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)")) is None
    )
    assert state_of(None) is None


def test_slurm_watch_sees_a_running_step_or_a_node_down_and_asks_sparingly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(scheduler.time, "monotonic", lambda: now[0])
    answers = {("show", "step", "7.0"): (0, STEP), ("show", "node", "node2"): (0, NODE2.format("IDLE"))}
    asked: list[tuple[str, ...]] = []

    def ask(*args: str) -> tuple[int, str] | None:
        asked.append(args)
        return answers.get(args)

    watch = SlurmWatch("7.0", ask)
    assert watch.seen("node2") == Seen(1000.0, "Slurm reporting its job step 7.0 running")
    now[0] = 1001.0
    assert watch.seen("node2") == Seen(1000.0, "Slurm reporting its job step 7.0 running")  # kept
    answers["show", "node", "node3"] = (0, NODE2.format("DOWN*"))
    assert watch.seen("node3") == Seen(1001.0, "Slurm reports node3 down", 0.0)
    assert watch.over() is None
    assert asked.count(("show", "step", "7.0")) == 1  # asked again only after ASK_EVERY_S
    answers["show", "node", "node2"] = (0, NODE2.format("ALLOCATED+NOT_RESPONDING"))
    now[0] = 1002.0
    assert watch.seen("node2") == Seen(1002.0, "Slurm reports node2 down", 0.0)  # after running, too
    now[0] = 1003.0
    answers["show", "step", "7.0"] = (1, "scontrol: error: Invalid job id specified")
    assert watch.over() == "Slurm's job step 7.0 is gone"
    answers["show", "step", "7.0"] = (1, "Unable to contact slurm controller (connect failure)")
    now[0] = 1006.0
    assert watch.over() is None  # this node's link is down: nothing known


def test_the_watch_is_slurms_only_inside_a_job_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler.shutil, "which", lambda name: "/usr/bin/" + name)
    watch = watch_of({"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"})
    assert isinstance(watch, SlurmWatch) and watch.step == "7.0"
    assert watch_of({"SLURM_JOB_ID": "7"}) is QUIET and watch_of({}) is QUIET
    assert QUIET.seen("node2") is None and QUIET.over() is None
