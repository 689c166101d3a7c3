"""The step breakdown, after a run's turns: one process per cell that needs it, alone on the
machine, so that no measured instance holds its members while one of them profiles
(docs/explanation/measurement.md). The process times :data:`WINDOWS` windows back to back (the GPU
profile sizes its window from them), then the parts of an update (CPU:
:mod:`harness.worker.breakdown`) or one profiled window (GPU: :mod:`harness.worker.profile`). Only
its breakdown is kept (:attr:`harness.launch.cells.runner.RunState.breakdowns`)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import Breakdown, Status
from harness.launch.cells.runner import CellEnd, Launcher, each_cell
from harness.spec.cell import Cell

WINDOWS = 1
"""Timed windows before the breakdown, after one untimed: enough for the GPU profile's window
length; the CPU parts calibrate their own."""

WINDOW_S = 0.2
"""Seconds of each of those windows (a turn's length by default; the run's ``window_s`` is 1 s)."""


@dataclass(frozen=True)
class Apart:
    """A cell's step breakdown measured in a process of its own: the breakdown (or, in
    ``bound_reason``, why it was not measured) and the process's wall seconds."""

    cell_id: str
    breakdown: Breakdown
    seconds: float


def options_for(options: WorkerOptions) -> WorkerOptions:
    """The run's worker options for a breakdown process: breakdown on, :data:`WINDOWS` windows of
    :data:`WINDOW_S`."""
    settings = dataclasses.replace(
        options.settings, breakdown=True, warmup_windows=1, repeats=WINDOWS, window_s=WINDOW_S
    )
    return dataclasses.replace(options, settings=settings)


def kept(end: CellEnd) -> Breakdown:
    """What a breakdown process's end leaves: its row's breakdown, or why there is none."""
    row = end.row
    if end.event != Event.RECORD or row is None:
        return not_measured(f"its process failed: {end.reason[:200]}")
    if row.status != Status.OK:
        return not_measured(f"its process was {row.status}: {row.reason[:200]}")
    return row.breakdown


def not_measured(why: str) -> Breakdown:
    """A breakdown with no parts, saying why."""
    return Breakdown(bound_reason=f"step breakdown not measured: {why}")


def measure_apart(cell: Cell, options: WorkerOptions, launcher: Launcher, prefix: str) -> Apart:
    """One breakdown process of ``cell`` (see the module docstring)."""
    t0 = time.monotonic()
    ends = list(each_cell([cell], options_for(options), launcher, prefix=prefix))
    return Apart(cell.id, kept(ends[0]), time.monotonic() - t0)
