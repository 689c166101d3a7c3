"""Worker helpers that need no TensorFlow session: error summaries, the job format, and verify's
numerics set before anything else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.contract.job import Job, Launch, WorkerOptions
from harness.contract.records import Status
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from harness.spec.strategies import Role
from harness.worker import main as worker_main
from harness.worker.main import DETERMINISM_PREFIX, failure_reason, failure_status, summarize_error


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
    options = WorkerOptions.of(
        Protocol(repeats=3),
        Platform("cpu", 0, 4),
        Path("/logs"),
        "/m.npz",
        verify_updates=8,
        weights_dir="/w",
        deterministic=True,
    )
    launch = Launch((("TF_CONFIG", "{}"),), Role.PEER, 1, 2, 1, True)
    for job in (
        Job(Cell(model="dense", replicas=2), options),
        Job(Cell(strategy="multi_worker_mirrored", workers=2), options, launch, "kill:x"),
    ):
        back = Job.from_json(json.loads(json.dumps(job.to_json())))
        assert back == job and isinstance(back.launch.role, Role)


def test_a_missing_deterministic_kernel_is_the_failed_cell_s_reason() -> None:
    e = FakeOpError("Deterministic GPU implementation of unsorted segment reduction op not available.")
    assert failure_reason(e, True) == (
        DETERMINISM_PREFIX
        + "FakeOpError: Deterministic GPU implementation of unsorted segment reduction op not available."
    )
    assert failure_reason(e, False) == summarize_error(e)  # not verify: as it came
    assert failure_reason(ValueError("shapes differ"), True) == "ValueError: shapes differ"


class UnimplementedError(Exception):
    """Named as TensorFlow's: the status follows the error's type name."""


def test_a_missing_deterministic_kernel_makes_the_cell_unsupported_under_verify_only() -> None:
    e = UnimplementedError("Deterministic GPU implementation of select and scatter not available.")
    assert failure_status(e, failure_reason(e, True)) == Status.UNSUPPORTED
    assert failure_status(e, failure_reason(e, False)) == Status.FAILED  # run: a failure
    other = UnimplementedError("Collectives are not yet implemented")
    assert failure_status(other, failure_reason(other, True)) == Status.FAILED


class _Stop(Exception):
    pass


@pytest.mark.parametrize("deterministic", [True, False])
def test_the_worker_sets_its_numerics_before_its_devices(
    deterministic: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``main`` hands ``WorkerOptions.deterministic`` to ``configure_numerics`` before set-up (the
    devices, the strategy, the first op); set-up here stops the worker."""
    order: list[Any] = []
    monkeypatch.setattr(worker_main, "cap_memory", lambda gib: None)
    monkeypatch.setattr(worker_main, "configure_numerics", lambda on: order.append(("numerics", on)))

    def set_up(*_: Any) -> Any:
        order.append("set-up")
        raise _Stop

    monkeypatch.setattr(worker_main, "_set_up", set_up)
    options = WorkerOptions.of(Protocol(), Platform("cpu", 0, 2), tmp_path, deterministic=deterministic)
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(Job(Cell(model="dense"), options).to_json()))
    with pytest.raises(_Stop):
        worker_main.main([str(job_path), str(tmp_path / "events.jsonl")])
    assert order == [("numerics", deterministic), "set-up"]
