"""The co-tenants' start barrier: T processes of one cell wait for each other after their first call."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def tenant_barrier(folder: str | None, index: int, tenants: int, timeout_s: float
                   ) -> Callable[[], None]:
    """A barrier for the ``tenants`` processes of a co-tenant cell: each writes ``ready-<index>``
    into ``folder`` and waits until all have; RuntimeError naming the absent ones after
    ``timeout_s``. A no-op without a folder or with one tenant."""
    if not folder or tenants <= 1:
        return lambda: None

    def wait() -> None:
        Path(folder, f"ready-{index}").touch()
        deadline = time.monotonic() + timeout_s
        while True:
            absent = [i for i in range(tenants) if not Path(folder, f"ready-{i}").exists()]
            if not absent:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"co-tenant barrier: tenant(s) {absent} not ready after "
                                   f"{timeout_s:g} s")
            time.sleep(0.01)
    return wait
