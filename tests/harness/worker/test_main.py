"""Worker helpers that need no TensorFlow session: error summaries and the job format."""

from __future__ import annotations

import json
from pathlib import Path

from harness.contract.job import Job, Launch, WorkerOptions
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from harness.spec.strategies import Role
from harness.worker.main import summarize_error


class FakeOpError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def test_summarize_error_drops_tensorflow_stack_dumps() -> None:
    message = (
        "Graph execution error:\n\nDetected at node cond/Placeholder defined at (most recent "
        'call last):\n  File "<frozen runpy>", line 198, in _run_module_as_main\n\n'
        "  (0) INVALID_ARGUMENT:  You must feed a value for placeholder tensor\n"
        "  (0) INVALID_ARGUMENT:  You must feed a value for placeholder tensor\n"
    )
    text = summarize_error(FakeOpError(message))
    assert text == (
        "FakeOpError: Graph execution error: (0) INVALID_ARGUMENT:  You must feed a "
        "value for placeholder tensor"
    )


def test_summarize_error_is_bounded() -> None:
    assert len(summarize_error(ValueError("x" * 10_000), limit=100)) == 100


def test_job_round_trips_through_json() -> None:
    options = WorkerOptions(
        Protocol(repeats=3),
        Platform("cpu", 0, 4),
        Path("/logs"),
        "/m.npz",
        verify_updates=8,
        weights_dir="/w",
    )
    launch = Launch((("TF_CONFIG", "{}"),), Role.PEER, 1, 2, 1, True)
    for job in (
        Job(Cell(model="dense", replicas=2), options),
        Job(Cell(strategy="multi_worker_mirrored", workers=2), options, launch, "kill:x"),
    ):
        back = Job.from_json(json.loads(json.dumps(job.to_json())))
        assert back == job and isinstance(back.launch.role, Role)
