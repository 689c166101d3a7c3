"""Coverage of the row CI on re-runs: does one run's CI contain what other runs measure?

Runs ``HARNESS_COVERAGE_RUNS`` (default 8) separate ``python -m harness run`` of two cells (cnn and
dense, default strategy, batch 64) into one results folder, with the default sweep's protocol (3
interleaved processes per cell). For each run and cell: does its 95% CI contain the median of the
other runs' figures? Asked of five intervals:

- ``row``: the CI the run stored. The first two runs of a fresh folder have no history, so their
  CI covers their own processes only; from the third on it is widened to the spread of the earlier
  runs' figures (``stats.figure_with_history``, ``ci_history_runs`` > 0);
- ``history (other runs)``: the same rule with every other run as history (a folder that already
  holds the other runs: what a nightly job sees once it has a history);
- ``processes only``: log-scale Student t over this run's process figures (``stats.figure``);
- ``hierarchical bootstrap``: processes, then windows inside them, resampled (percentile,
  ``benchmarks/bootstrap.py``);
- ``one process``: the percentile bootstrap of the median of the first process's windows (what a
  single-process run reported before: [min, max] of its windows).

Target for the row: at least 14 of 16 (8 runs x 2 cells). ``-s`` prints the table;
``HARNESS_COVERAGE_RESULTS=DIR`` replays runs already measured there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.bootstrap import hierarchical_bootstrap_ci
from harness.formulas import stats
from harness.results import history

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("HARNESS_COVERAGE_RUNS", "8"))
CELLS = ["--model", "cnn,dense", "--strategy", "default", "--batch", "64", "--no-peak", "--no-breakdown"]
"""Axes alone: a custom sweep with the default sweep's protocol (no peak: mfu is not asked)."""
TARGET = 14 / 16


def _measure(out: Path) -> None:
    for _ in range(RUNS):
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "run", "--results", str(out), *CELLS],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]


def intervals(
    row: pd.Series, cell_windows: pd.DataFrame, others: list[float]
) -> dict[str, tuple[float, float]]:
    """The intervals of one run's cell: its stored row, its window rows (columns pass,
    examples_per_sec) and the other runs' figures (oldest first)."""
    by_pass = [g.examples_per_sec.to_numpy() for _, g in cell_windows.groupby("pass")]
    figures = [float(np.median(w)) for w in by_pass]
    alone = stats.figure(figures)
    with_others, _ = stats.figure_with_history(figures, others)
    return {
        "row": (row.examples_per_sec_ci_low, row.examples_per_sec_ci_high),
        "history (other runs)": (with_others.low, with_others.high),
        "processes only": (alone.low, alone.high),
        "hierarchical bootstrap": hierarchical_bootstrap_ci(by_pass, resamples=2000),
        "one process": hierarchical_bootstrap_ci(by_pass[:1]),
    }


NAMES = ("row", "history (other runs)", "processes only", "hierarchical bootstrap", "one process")


def coverage(cells: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """One line per run and cell: its figure, the others' median, and whether each interval
    contains that median."""
    ok = cells[cells.status == "ok"].sort_values("timestamp")
    lines = []
    for cell_id, runs in ok.groupby("cell_id"):
        for _, r in runs.iterrows():
            others = runs[runs.run_id != r.run_id].examples_per_sec.astype(float).tolist()
            target = float(np.median(others))
            mine = windows[
                (windows.run_id == r.run_id) & (windows.cell_id == cell_id) & (windows.worker == 0)
            ]
            line = {
                "cell": cell_id.split("/")[0],
                "run": r.run_id[-6:],
                "history": r.ci_history_runs,
                "figure": r.examples_per_sec,
                "others_median": target,
            }
            for name, (lo, hi) in intervals(r, mine, others).items():
                line[name] = bool(lo <= target <= hi)
                line[f"{name} width"] = (hi - lo) / r.examples_per_sec
            lines.append(line)
    return pd.DataFrame(lines)


@pytest.mark.slow
def test_row_ci_covers_other_runs(tmp_path: Path) -> None:
    given = os.environ.get("HARNESS_COVERAGE_RESULTS")
    out = Path(given) if given else tmp_path / "results"
    if not given:
        _measure(out)
    cells, windows = history.load(out)
    table = coverage(cells, windows)
    assert len(table) >= 2 * min(RUNS, 2)
    spread = table.groupby("cell").figure.agg(lambda f: (f.max() - f.min()) / f.median())
    print()
    print(table.to_string(index=False, float_format=lambda x: f"{x:,.3f}"))
    print(f"run-to-run spread (range / median): {spread.to_dict()}")
    for name in NAMES:
        print(
            f"{name}: covers {int(table[name].sum())} of {len(table)}; "
            f"median width {table[f'{name} width'].median():.1%} of the figure"
        )
    assert table["row"].mean() >= TARGET
