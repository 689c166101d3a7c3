"""The start barrier: co-tenants wait for each other after their first call."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def start_barrier(folder: str | None, index: int, processes: int, timeout_s: float) -> Callable[[], None]:
    """A barrier for ``processes`` processes started together: each writes ``ready-<index>`` into
    ``folder`` and waits until all have; RuntimeError naming the absent ones after ``timeout_s``,
    or at once when the launcher has marked one ended (``ended-<index>``: it failed before the
    barrier). A no-op without a folder or with one process."""
    if not folder or processes <= 1:
        return lambda: None

    def wait() -> None:
        Path(folder, f"ready-{index}").touch()
        deadline = time.monotonic() + timeout_s
        while True:
            absent = [i for i in range(processes) if not Path(folder, f"ready-{i}").exists()]
            if not absent:
                return
            ended = [i for i in absent if Path(folder, f"ended-{i}").exists()]
            if ended:
                raise RuntimeError(
                    f"start barrier: process(es) {ended} of {processes} ended before reaching it"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"start barrier: process(es) {absent} of {processes} not ready after {timeout_s:g} s"
                )
            time.sleep(0.01)

    return wait
