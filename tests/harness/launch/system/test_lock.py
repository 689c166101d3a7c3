"""The machine-wide measuring lock: a second run is refused naming the holder, or waits for it;
the lock of a process that died is taken over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.launch.system.lock import MachineLock, read_holder


def test_a_second_run_is_refused_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with MachineLock(tmp_path / "a", path, "python -m harness run --sweep smoke"):
        holder = read_holder(path)
        assert holder is not None and holder.command == "python -m harness run --sweep smoke"

        with pytest.raises(HarnessError) as e:
            MachineLock(tmp_path / "b", path).acquire(wait=False)

        text = str(e.value)
        assert f"pid {holder.pid}" in text and "run --sweep smoke" in text and "--wait-lock" in text
    assert read_holder(path) is None  # released: the file names no one


def test_a_waiting_run_takes_the_lock_when_the_holder_ends(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    first = MachineLock(tmp_path / "a", path, "first")
    first.acquire()
    said: list[str] = []
    second = MachineLock(tmp_path / "b", path, "second")

    second.acquire(wait=True, say=said.append, sleep=lambda s: first.release())

    assert len(said) == 1 and "waiting for the machine" in said[0] and "`first`" in said[0]
    holder = read_holder(path)
    assert holder is not None and holder.command == "second"
    second.release()


def test_the_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "lock"  # its holder was SIGKILLed: the kernel released its flock, the file stays
    path.write_text(json.dumps({"pid": 2**22 + 1, "command": "gone", "since": "x", "out": "r"}))
    said: list[str] = []

    lock = MachineLock(tmp_path, path, "next")
    lock.acquire(say=said.append)

    assert said == [f"took over the lock of pid {2**22 + 1}, which is no longer running"]
    lock.release()
