"""The namespace holder's and the join's own logic (:mod:`harness.worker.netns`); making and
joining real namespaces is tested from the parent's side (tests/harness/launch/system/test_isolation.py)."""

from __future__ import annotations

import errno

import pytest

from harness.contract.isolation import NETNS_ENV, NO_NAMESPACE_FAULT
from harness.worker import netns


def test_the_injected_fault_fails_unshare_as_a_forbidding_system_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_INJECT_FAULT", f"kill:x;{NO_NAMESPACE_FAULT}")
    with pytest.raises(OSError, match="not permitted") as info:
        netns.unshare(netns.CLONE_NEWNET)
    assert info.value.errno == errno.EPERM


def test_no_namespace_named_means_nothing_is_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    netns.join_from({NETNS_ENV: ""})  # would raise on any path it tried to open
    with pytest.raises(FileNotFoundError):
        netns.join(["/nonexistent/ns/net"])


def test_an_unknown_mode_is_refused_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert netns.main(["serve"]) == 2 and netns.main(["join"]) == 2
    assert "hold | join MODULE" in capsys.readouterr().err
