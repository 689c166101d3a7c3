"""Which cells a night's next round measures, and the series key."""

from __future__ import annotations

import numpy as np

from harness.launch.versions.ab import CellOutcome
from harness.launch.versions.nightly import NightBudget, due, series_key
from harness.spec.cell import Cell

CELLS = [Cell(model="cnn"), Cell(model="dense"), Cell(model="cnn", strategy="mirrored", replicas=2)]


def outcome(cell: Cell, sd: float, n: int, failure: str = "") -> CellOutcome:
    o = CellOutcome(cell, "turns")
    o.ratios = list(np.exp(np.random.default_rng(n).normal(0, sd, n))) if n else []
    o.failure = failure
    return o


def test_every_cell_until_min_pairs_then_the_noisier_half() -> None:
    budget = NightBudget(60, min_pairs=10, max_pairs=50)
    fresh = [outcome(c, 0.03, 4) for c in CELLS]
    assert due(fresh, [4, 4, 4], budget) == [0, 1, 2]
    mixed = [outcome(CELLS[0], 0.01, 12), outcome(CELLS[1], 0.05, 12), outcome(CELLS[2], 0.03, 9)]
    assert due(mixed, [12, 12, 9], budget) == [2]  # the one short of min_pairs first
    ready = [outcome(CELLS[0], 0.01, 12), outcome(CELLS[1], 0.05, 12), outcome(CELLS[2], 0.03, 12)]
    assert due(ready, [12, 12, 12], budget) == [1, 2]  # the quiet cell waits


def test_failed_cells_and_cells_at_max_pairs_are_done() -> None:
    budget = NightBudget(60, min_pairs=2, max_pairs=5)
    done = [outcome(CELLS[0], 0.03, 5), outcome(CELLS[1], 0.03, 3, failure="worker exited 1")]
    assert due(done, [5, 3], budget) == []


def test_a_series_key_changes_with_each_part() -> None:
    base = series_key("c", "fp", "0.1.0", "pin")
    assert base == series_key("c", "fp", "0.1.0", "pin") and len(base) == 16
    assert (
        len(
            {
                base,
                series_key("d", "fp", "0.1.0", "pin"),
                series_key("c", "fq", "0.1.0", "pin"),
                series_key("c", "fp", "0.2.0", "pin"),
                series_key("c", "fp", "0.1.0", "pio"),
            }
        )
        == 5
    )
