"""Earlier runs' figures for a row's CI (harness.results.history.earlier_figures)."""

from __future__ import annotations

import pandas as pd

from harness.results.history import earlier_figures


def _cells() -> pd.DataFrame:
    rows = [
        ("r1", "2026-01-01T00:00:00", "c", "fp", "ok", 100.0),
        ("r2", "2026-01-02T00:00:00", "c", "fp", "ok", 110.0),
        ("r2", "2026-01-02T00:05:00", "c", "fp", "ok", 112.0),  # a run with two rows: its last
        ("r3", "2026-01-03T00:00:00", "c", "other", "ok", 500.0),  # another machine
        ("r4", "2026-01-04T00:00:00", "c", "fp", "failed", None),
        ("r5", "2026-01-05T00:00:00", "d", "fp", "ok", 7.0),  # another cell
        ("r0", "2025-12-31T00:00:00", "c", "fp", "ok", 90.0),
    ]  # older, listed last
    return pd.DataFrame(
        rows, columns=["run_id", "timestamp", "cell_id", "fingerprint", "status", "examples_per_sec"]
    )


def test_one_figure_per_earlier_run_of_the_cell_on_the_fingerprint_oldest_first() -> None:
    assert earlier_figures(_cells(), "c", "fp") == [90.0, 100.0, 112.0]


def test_no_fingerprint_or_no_rows_gives_no_history() -> None:
    assert earlier_figures(_cells(), "c", None) == []
    assert earlier_figures(_cells().iloc[0:0], "c", "fp") == []
