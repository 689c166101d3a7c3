"""A/A calibration of the regression gate on this machine's own noise.

Runs the same code ``HARNESS_AA_RUNS`` times (default 12) over a few real cells, each run a fresh
``python -m harness run``, then replays the gate on them: every trial takes one run as the candidate
and ``HISTORY`` others, drawn at random, as its baseline (same code, so the runs are exchangeable).

- false-positive rate: series called regression or improvement, over all series-trials (target <= 1%);
- detection rate: the same trials with the candidate's windows slowed by 10% (target >= 95%).

Prints both with the run-to-run CV of each cell's median; ``-s`` shows them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from harness import gate, history
from harness.gate import GatePolicy

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("HARNESS_AA_RUNS", "12"))
HISTORY = 8
TRIALS = 400
SLOWDOWN = 1 / 1.10
CELLS = ["--model", "cnn,dense", "--strategy", "default", "--batch", "64", "--repeats", "5",
         "--window-s", "0.3", "--warmup-windows", "1", "--steps-per-execution", "10"]


def _measure(results: Path) -> None:
    for _ in range(RUNS):
        subprocess.run([sys.executable, "-m", "harness", "run", "--out", str(results), *CELLS],
                       cwd=ROOT, check=True, capture_output=True, timeout=600)


def test_gate_false_positives_and_detection(tmp_path: Path, benchmark: object) -> None:
    results = tmp_path / "results"
    _measure(results)
    cells, windows = history.load(results)
    run_ids = list(history.runs(cells)["run_id"])
    ok = history.ok_rows(cells, run_ids)
    series = sorted(ok["cell_id"].unique())
    medians = {c: dict(zip(ok[ok.cell_id == c].run_id, ok[ok.cell_id == c].examples_per_sec))
               for c in series}
    rates = {(c, r): history.window_rates(windows, [r], c) for c in series for r in run_ids}
    rng = np.random.default_rng(0)
    policy = GatePolicy()
    false_calls = detected = trials = 0
    for _ in range(TRIALS):
        cand = run_ids[rng.integers(len(run_ids))]
        base = list(rng.choice([r for r in run_ids if r != cand], HISTORY, replace=False))
        for c in series:
            past = [medians[c][r] for r in base]
            base_windows = [w for r in base for w in rates[(c, r)]]
            for factor in (1.0, SLOWDOWN):
                cw = [w * factor for w in rates[(c, cand)]]
                v = gate.judge_series(c, "fp", cw, medians[c][cand] * factor, base_windows, past,
                                      len(series), policy)
                if factor == 1.0:
                    false_calls += v.change in (gate.REGRESSION, gate.IMPROVEMENT)
                else:
                    detected += v.change == gate.REGRESSION
            trials += 1
    cv = {c: float(np.std(list(m.values()), ddof=1) / np.mean(list(m.values())))
          for c, m in medians.items()}
    fp_rate, detection = false_calls / trials, detected / trials
    print(f"\nA/A over {RUNS} runs x {len(series)} cells, {trials} series-trials "
          f"(history {HISTORY} runs): false-positive rate {fp_rate:.2%}, detection of a 10% "
          f"slowdown {detection:.1%}; run-to-run CV of the medians: "
          + ", ".join(f"{c.split('/')[0]} {v:.1%}" for c, v in cv.items()))
    benchmark.extra_info.update(false_positive_rate=fp_rate, detection_rate=detection,
                                runs=RUNS, series_trials=trials, run_to_run_cv=cv)
    benchmark.pedantic(lambda: None, rounds=1)
    assert fp_rate <= 0.01
    assert detection >= 0.95
