"""The suite's fit and ctl rows against a plain ``model.fit`` a user would write, side by side.

CNN, MirroredStrategy on 2 replicas, 64 examples per replica (global batch 128):
- the suite's ``fit`` row (steps_per_execution 1: more is unsupported on this op, see docs/explanation/measurement.md);
- the suite's best ``ctl`` row at global batch 128 (mirrored with each CPU cross-device op, and the
  default strategy at batch 128), steps_per_execution 10;
- a plain ``model.fit(x, y, batch_size=128, epochs=2)``, second epoch's examples/s, median of 3 runs.
Reports suite_fit / plain_fit and best_ctl / plain_fit.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.conftest import record_row
from harness.contract.columns import flatten
from harness.launch.sweep.budget import run_in_turns
from harness.launch.sweep.run_params import Output, Work
from harness.launch.system.platform import detect_platform
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol

PLATFORM = detect_platform()
pytestmark = pytest.mark.skipif(PLATFORM.max_replicas < 2, reason="needs 2 devices")
PROTOCOL = Protocol(repeats=5, window_s=1.5, warmup_windows=1)
PLAIN_RUNS = 3
FIT = Cell(model="cnn", strategy="mirrored", replicas=2, batch=64, loop="fit", steps_per_execution=1)
CTLS = [
    Cell(model="cnn", strategy="mirrored", cross_device_ops=op, replicas=2, batch=64)
    for op in ("auto", "hierarchical_copy", "reduction_to_one_device")
]
CTLS.append(Cell(model="cnn", strategy="default", batch=128))


def plain_fit() -> float:
    script = Path(__file__).with_name("plain_fit.py")
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, str(script), "2", "128"],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            ).stdout.splitlines()[-1]
        )
        for _ in range(PLAIN_RUNS)
    ]
    return statistics.median(r["examples_per_sec"] for r in runs)


def test_fit_and_ctl_against_plain_fit(benchmark: Any, results_dir: Path) -> None:
    result = run_in_turns(Work((FIT, *CTLS), PROTOCOL, PLATFORM), Output(results_dir))
    rows = {r.cell.cell_id: flatten(r) for r in result.rows}
    assert all(r["status"] == "ok" for r in rows.values()), [r["reason"] for r in rows.values()]
    plain = plain_fit()
    fit = rows[FIT.id]
    best = max((rows[c.id] for c in CTLS), key=lambda r: r["examples_per_sec"])
    record_row(benchmark, fit, result.windows)
    ratios = {
        "suite_fit_over_plain_fit": fit["examples_per_sec"] / plain,
        "best_ctl_over_plain_fit": best["examples_per_sec"] / plain,
    }
    benchmark.extra_info.update(
        {
            "plain_fit_examples_per_sec": plain,
            "best_ctl_cell": best["cell_id"],
            "best_ctl_examples_per_sec": best["examples_per_sec"],
            **ratios,
        }
    )
    print(
        f"\nplain model.fit (2nd epoch, median of {PLAIN_RUNS}): {plain:,.0f} ex/s; suite fit "
        f"{fit['examples_per_sec']:,.0f} ex/s (x{ratios['suite_fit_over_plain_fit']:.2f}); best ctl "
        f"{best['cell_id']} {best['examples_per_sec']:,.0f} ex/s "
        f"(x{ratios['best_ctl_over_plain_fit']:.2f})"
    )
    for c in CTLS:
        print(f"  {c.id}: {rows[c.id]['examples_per_sec']:,.0f} ex/s")
    assert ratios["suite_fit_over_plain_fit"] > 0 and fit["allreduces_per_update"] == 1
