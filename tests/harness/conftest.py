from __future__ import annotations

import pytest


@pytest.fixture
def no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """``RunState`` and ``run_ab`` stamp every row with the checkout's commit (``git rev-parse``, a
    process, in :func:`harness.launch.cells.runner.suite_version`) and the machine's facts (its GPUs from
    ``nvidia-smi``, a process where there is one, in :func:`harness.launch.system.platform.machine_facts`):
    a fixed commit and no GPU query keep the tests of their event loops with fake launchers in the
    unit tier."""
    monkeypatch.setattr("harness.launch.cells.runner.git_sha", lambda: "0123456789ab")
    monkeypatch.setattr("harness.launch.system.platform.gpu_query", lambda: "")
