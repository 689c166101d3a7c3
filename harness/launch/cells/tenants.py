"""Co-tenant cells: T independent worker processes of one cell on the same devices."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from harness.contract.columns import flatten, unflatten
from harness.contract.events import Event, EventLine
from harness.contract.job import TENANT_BARRIER_ENV, Launch, WorkerOptions
from harness.contract.records import CellRow
from harness.launch.cells.single import run_worker
from harness.launch.system.process import POLL_S
from harness.results.aggregate import combine
from harness.spec.cell import Cell
from harness.spec.strategies import Role


def run_tenants(cell: Cell, options: WorkerOptions, name: str) -> Iterator[EventLine]:
    """Start ``cell.tenants`` worker processes of the cell at once (each with every device of the
    cell and the host's cores; GPU memory growth is on in every worker), let them meet at a file
    barrier after their first call, and yield tenant 0's start, then one record that
    :func:`harness.results.aggregate.combine` makes of all of them (or the first tenant's failure).
    Each tenant's process is launched on a thread of its own; when one's ends, ``ended-<i>`` in the
    barrier's folder tells partners still waiting there to stop at once."""
    with tempfile.TemporaryDirectory(prefix="harness-tenants-") as barrier:
        streams: list[list[EventLine]] = [[] for _ in range(cell.tenants)]

        def follow(i: int) -> None:
            launch = Launch(((TENANT_BARRIER_ENV, barrier),), Role.CHIEF, i, None, 1, True, meet=cell.tenants)
            try:
                streams[i].extend(run_worker(cell, options, f"{name}-tenant{i}", launch))
            finally:
                Path(barrier, f"ended-{i}").touch()

        threads = [threading.Thread(target=follow, args=(i,), daemon=True) for i in range(cell.tenants)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(POLL_S)
    facts = next((ev.get("facts") for ev in streams[0] if ev.get("facts")), None)
    yield {"event": Event.START, "cell_id": cell.id, "facts": facts}
    for i, events in enumerate(streams):
        failed = next((ev for ev in events if ev["event"] == Event.FAILED), None)
        if failed is not None or not any(ev["event"] == Event.RECORD for ev in events):
            reason = f"tenant {i} of {cell.tenants}: {failed['reason'] if failed else 'no record'}"
            yield {"event": Event.FAILED, "cell_id": cell.id, "facts": facts, "reason": reason}
            return
    records = [next(ev for ev in events if ev["event"] == Event.RECORD) for events in streams]
    rows = [unflatten(CellRow, r["row"]) for r in records]
    row, windows = combine(rows, [r["windows"] for r in records], cell.effective_batch)
    yield {
        "event": Event.RECORD,
        "row": flatten(row),
        "report": records[0].get("report") or {},
        "windows": windows,
        "facts": facts,
    }
