"""The step breakdown after the turns: a process's options, and what its end leaves (no process)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import Breakdown, Status
from harness.launch.cells.runner import CellEnd
from harness.launch.instances.breakdowns import WINDOW_S, WINDOWS, kept, options_for
from harness.results.measurement import cell_row
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

CELL = Cell(model="dense", strategy="mirrored", replicas=2, batch=32)
PROTOCOL = Protocol(breakdown=False)


def test_a_breakdown_process_times_its_parts_after_a_single_window() -> None:
    options = WorkerOptions.of(PROTOCOL, Platform(), Path("logs"))
    settings = options_for(options).settings
    assert settings.breakdown and (settings.warmup_windows, settings.repeats) == (1, WINDOWS)
    assert settings.window_s == WINDOW_S
    assert replace(settings, breakdown=False, repeats=5, window_s=1.0) == options.settings  # nothing else


def test_its_end_leaves_the_breakdown_or_why_there_is_none() -> None:
    parts = Breakdown(parts_step_s=0.01, compute_s=0.008)
    row = replace(cell_row(CELL, PROTOCOL), status=Status.OK, breakdown=parts)
    assert kept(CellEnd(CELL, Event.RECORD, row)) == parts
    died = kept(CellEnd(CELL, Event.FAILED, reason="worker exited with signal SIGKILL"))
    assert died.compute_s is None
    assert (
        died.bound_reason
        == "step breakdown not measured: its process failed: worker exited with signal SIGKILL"
    )
    invalid = replace(row, status=Status.INVALID, reason="loss is NaN")
    assert kept(CellEnd(CELL, Event.RECORD, invalid)).bound_reason == (
        "step breakdown not measured: its process was invalid: loss is NaN"
    )
