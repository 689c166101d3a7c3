"""The start barrier that co-tenants meet at."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.worker.barrier import start_barrier


def test_the_barrier_releases_when_every_process_is_ready(tmp_path: Path) -> None:
    released = []
    waits = [start_barrier(str(tmp_path), i, 2, timeout_s=10) for i in range(2)]
    threads = [
        threading.Thread(target=lambda w=w, i=i: (w(), released.append(i))) for i, w in enumerate(waits)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert sorted(released) == [0, 1]


def test_an_absent_partner_is_named_after_the_timeout(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"process\(es\) \[1\] of 2 not ready after 0.05 s"):
        start_barrier(str(tmp_path), 0, 2, timeout_s=0.05)()


def test_no_folder_or_one_process_is_no_barrier() -> None:
    start_barrier(None, 0, 2, 0.0)()
    start_barrier("/nonexistent", 0, 1, 0.0)()


def test_a_partner_that_ended_stops_the_wait_at_once(tmp_path: Path) -> None:
    (tmp_path / "ended-1").touch()
    with pytest.raises(RuntimeError, match=r"process\(es\) \[1\] of 2 ended before reaching it"):
        start_barrier(str(tmp_path), 0, 2, timeout_s=60)()
