"""Shared set-up of the pytest-benchmark tests.

``HARNESS_BENCH_SWEEP`` picks the sweep whose cells become tests (default: smoke);
``HARNESS_BENCH_OUT`` keeps their rows in a results folder (default: a temporary one).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = os.environ.get("HARNESS_BENCH_OUT")
    return Path(out) if out else tmp_path_factory.mktemp("results")
