from __future__ import annotations

import pytest


@pytest.fixture
def no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_sweep`` and ``run_ab`` stamp every row with the checkout's commit (``git rev-parse``, a
    process, in :func:`harness.launch.runner.suite_version`): a fixed one keeps the tests of their
    event loops with fake launchers in the unit tier."""
    monkeypatch.setattr("harness.launch.runner.git_sha", lambda: "0123456789ab")
