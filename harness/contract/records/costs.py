"""The costs table's row (:class:`CostRow`): where a local run's wall time went. Pure: no pyarrow,
no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import Col
from harness.contract.records.shared import RunFingerprint, RunInfo


@dataclass(frozen=True, kw_only=True)
class CostRow:
    """One row per local run in turns (the ``costs`` table): where the run's wall time went, so the
    suite's own cost is tracked like any other figure (``compare`` prints its change). Phases are
    summed over the run's group instances on the parent's clock; an instance's phases follow each
    other, so they add up to its wall time."""

    run: RunInfo
    fingerprint: RunFingerprint
    budget_s: Annotated[float, Col("s", "The run's budget (--budget-min x 60).")]
    wall_s: Annotated[float, Col("s", "The run, from its first process to its rows written.")]
    instances: Annotated[int, Col("instances", "Group instances run (dropped ones included).")]
    processes: Annotated[
        int, Col("processes", "Worker processes those instances started (servers included).")
    ]
    forked: Annotated[bool, Col("", "Workers were forked from a fork server (False: --no-fork).")]
    start_s: Annotated[
        float,
        Col(
            "s",
            "From each instance's start to every member ready: start (fork or interpreter), import, "
            "devices, build, first call (the first instance also waits for the fork server's import).",
        ),
    ]
    calibration_s: Annotated[float, Col("s", "Calibration turns: each member's window length and warm-up.")]
    turns_s: Annotated[float, Col("s", "Window turns, wall time (the timed windows and the hand-overs).")]
    windows_s: Annotated[float, Col("s", "Timed windows inside the window turns: the measurement itself.")]
    finish_s: Annotated[
        float, Col("s", "Finishing turns: integrity checks (the step breakdown too in older rows).")
    ]
    exit_s: Annotated[float, Col("s", "From the last finishing turn to every process of the instance gone.")]
    breakdown_s: Annotated[
        float | None,
        Col(
            "s",
            "Step breakdown processes after the turns, one per cell broken down, wall time (0 in "
            "older rows, whose breakdowns ran in the finishing turns).",
        ),
    ] = None
    breakdowns: Annotated[int | None, Col("processes", "Step breakdown processes after the turns.")] = None
    peak_s: Annotated[float, Col("s", "The matmul-peak processes.")]
    parent_s: Annotated[
        float,
        Col(
            "s", "The rest of wall_s: the parent's own work (planning, rows, files) and fork servers' start."
        ),
    ]
    fixed_s_per_process: Annotated[
        float | None,
        Col(
            "s",
            "Median over completed instances of (instance wall - timed windows) / its processes: the "
            "fixed cost of one measured process.",
        ),
    ]
