"""Calibration of ``python -m harness ab`` on this machine: false calls of an A/A comparison and the
detection of a planted 5 % and 10 % slowdown, by resampling measured pairs.

Measures three pools of pairs with one interpreter (``ab --min-pairs N --max-pairs N``: exactly N
pairs, no early stop; the default protocol; ``HARNESS_AB_MODE``: duet, the default, or
alternate): A against A, and A against B slowed through the test-only hook
``HARNESS_SLOW_WINDOWS`` (B busy-waits F x each training call, running at 1 / (1 + F) the speed: F =
0.0526 for 5 %, 0.111 for 10 %). Then runs ``TRIALS`` sequential decisions with the default rule,
each drawing pair ratios with replacement from a pool until decided or 30 pairs
(:func:`harness.analysis.ab.simulate`). Targets: A/A false calls <= 1 %; a 5 % slowdown caught in
>= 95 % of trials within 30 pairs.

``-s`` prints the figures; ``HARNESS_AB_RESULTS=DIR`` replays pools measured there before.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.analysis import ab

ROOT = Path(__file__).resolve().parents[1]
PAIRS = int(os.environ.get("HARNESS_AB_PAIRS", "24"))
MODE = os.environ.get("HARNESS_AB_MODE", "duet")
TRIALS = 2000
CELL = [
    "--model",
    "cnn",
    "--strategy",
    "default",
    "--batch",
    "64",
    "--no-peak",
    "--no-breakdown",
    "--mode",
    MODE,
]
POOLS = {"A/A": ("aa", 0.0), "5% slower": ("slow5", 1 / 0.95 - 1), "10% slower": ("slow10", 1 / 0.90 - 1)}
"""name -> (folder, the planted slowdown fraction of B)."""


def _measure(out: Path) -> None:
    for folder, slow in POOLS.values():
        env = ["--b-env", f"HARNESS_SLOW_WINDOWS={slow:.4f}"] if slow else []
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "ab",
                "--out",
                str(out / folder),
                *CELL,
                "--min-pairs",
                str(PAIRS),
                "--max-pairs",
                str(PAIRS),
                *env,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        assert proc.returncode in (0, 1, 3), proc.stderr[-3000:]


def pair_ratios(results: Path) -> list[float]:
    """B/A of every complete pair in a results folder of ab rows."""
    return list(ab.pair_ratios(pd.read_parquet(results / "cells"))["ratio"])


@pytest.mark.slow
def test_ab_calibration(tmp_path: Path) -> None:
    given = os.environ.get("HARNESS_AB_RESULTS")
    out = Path(given) if given else tmp_path
    if not given:
        _measure(out)
    rule = ab.Rule()
    figures = {}
    print()
    for name, (folder, _) in POOLS.items():
        pool = pair_ratios(out / folder)
        rates, pairs = ab.simulate(pool, rule, TRIALS, seed=1)
        figures[name] = rates
        logs = pd.Series(pool).map(math.log)
        print(
            f"{name}: {len(pool)} measured pairs, B/A median {math.exp(logs.median()):.3f}, "
            f"sd of log {logs.std():.3f}; "
            f"{TRIALS} resampled trials: slower {rates[ab.SLOWER]:.1%}, faster "
            f"{rates[ab.FASTER]:.1%}, same {rates[ab.SAME]:.1%}, undecided "
            f"{rates[ab.UNDECIDED]:.1%}; mean pairs {pairs:.1f}"
        )
    assert figures["A/A"][ab.SLOWER] + figures["A/A"][ab.FASTER] <= 0.01
    assert figures["5% slower"][ab.SLOWER] >= 0.95
