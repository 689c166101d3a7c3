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
    # the windows themselves, so `python -m harness ingest` can rebuild the history from the JSON
    benchmark.extra_info["harness_windows"] = [
        {
            k: w.get(k)
            for k in (
                "worker",
                "pass",
                "repeat",
                "window_steps",
                "window_s",
                "start_s",
                "examples",
                "examples_per_sec",
            )
        }
        for w in mine
    ]
    if not mine:
        return
    stats = benchmark._make_stats(1)
    benchmark._mode = "harness windows"
    for w in mine:
        stats.update(w["window_s"] / w["window_steps"])
