"""Shared set-up of the pytest-benchmark tests.

``HARNESS_BENCH_SWEEP`` picks the sweep whose cells become tests (default: smoke);
``HARNESS_BENCH_OUT`` keeps their rows in a results folder (default: a temporary one).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = os.environ.get("HARNESS_BENCH_OUT")
    return Path(out) if out else tmp_path_factory.mktemp("results")


def record_row(benchmark: Any, row: dict[str, Any], windows: list[dict[str, Any]]) -> None:
    """Report a harness row through pytest-benchmark: its timed windows become the rounds (seconds
    per optimizer update) and the whole row is ``extra_info``.

    pytest-benchmark has no public call for timings measured elsewhere; ``_make_stats`` is the call
    its own ``pedantic`` mode uses to open a stats record.
    """
    benchmark.extra_info.update(
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
    )
    mine = [w for w in windows if w["cell_id"] == row["cell_id"]]
    if not mine:
        return
    stats = benchmark._make_stats(1)
    benchmark._mode = "harness windows"
    for w in mine:
        stats.update(w["window_s"] / w["window_steps"])
