"""The windows table's row (:class:`WindowRow`): one timed window of one worker process. Pure: no
pyarrow, no pandas. A flat TypedDict because its rows are assembled piecewise: the worker makes each
window's columns (:mod:`harness.results.measured`), a co-tenant's turns tag them (``framework``,
``shared``), and the parent adds ``run_id``, ``pass`` and ``ab_side`` when the process reports
(:mod:`harness.launch.cells.runner`, :mod:`harness.launch.versions.ab`); every field may be absent until then.
Functional syntax: ``pass`` is a keyword."""

from __future__ import annotations

from typing import Annotated, TypedDict

from harness.contract.columns import Col
from harness.contract.records.shared import AbSide, CellId, RunId
from harness.spec.frameworks import FRAMEWORKS

WindowRow = TypedDict(
    "WindowRow",
    {
        "run_id": RunId,
        "cell_id": CellId,
        "worker": Annotated[
            int,
            Col(
                "",
                "Worker index (0 for single-process strategies; one row per worker and window otherwise); "
                "for co-tenant cells the tenant index, each tenant's own windows (every window is kept; the"
                " aggregate uses those inside the tenants' common span).",
            ),
        ],
        "pass": Annotated[
            int,
            Col(
                "",
                "0-based pass of the run in which this window's process ran (a cell runs once per pass, so "
                "the pass identifies its process); for `ab` rows, the pair index.",
            ),
        ],
        "ab_side": AbSide,
        "repeat": Annotated[int, Col("", "0-based index of the timed window within its process.")],
        "framework": Annotated[
            str | None,
            Col(
                "",
                "With a co-tenant from another framework: the side that timed this window "
                f"({', '.join(('tensorflow', *FRAMEWORKS))}; the co-tenant's windows have worker 1 and "
                "no start_s); null elsewhere.",
            ),
        ],
        "shared": Annotated[
            bool | None,
            Col(
                "",
                "With a co-tenant from another framework: the window was taken while the other side "
                "trained (a turn together); false: alone. Null elsewhere.",
            ),
        ],
        "window_steps": Annotated[int, Col("updates", "Optimizer updates in the window.")],
        "start_s": Annotated[
            float | None,
            Col(
                "s",
                "Start of the window on the host's monotonic clock (comparable between processes of one "
                "host, not between hosts or boots).",
            ),
        ],
        "window_s": Annotated[
            float,
            Col(
                "s",
                "Wall time of the window: from the previous host sync to this window's host sync (single "
                "process), or between the cross-worker barriers around it (multi-worker: the same for every"
                " worker).",
            ),
        ],
        "worker_s": Annotated[
            float | None,
            Col(
                "s",
                "This worker's own time in the window: from the start barrier to its own host sync (equals "
                "window_s in a single process; null under parameter_server).",
            ),
        ],
        "worker_updates": Annotated[
            int | None,
            Col(
                "updates",
                "parameter_server: the updates this worker ran in the window (they sum to window_steps); "
                "null elsewhere.",
            ),
        ],
        "examples": Annotated[
            int,
            Col(
                "examples",
                "Global examples processed in the window (all replicas, workers and micro-batches).",
            ),
        ],
        "examples_per_sec": Annotated[float | None, Col("examples/s", "examples / window_s.")],
    },
    total=False,
)
"""One row of the windows table: one timed window of one worker process."""
