"""A/A calibration of the regression gate on this machine's own noise.

Runs the same code ``HARNESS_AA_RUNS`` times (default 30) over two real cells, each run a fresh
``python -m harness run``, then replays the gate on them. A trial takes ``n`` runs as the candidate
and ``HISTORY`` other runs as its baseline, both drawn at random (same code, so the runs are
exchangeable), for n = 1 and n = 3 candidate runs:

- false-positive rate: series called regression or improvement, over all series-trials (target <= 1%);
- detection rate: the same trials with the candidate runs slowed by 10% (target >= 95%).

Prints both with the run-to-run CV of each cell's median and the gate's median detectable effect;
``-s`` shows them. ``HARNESS_AA_RESULTS=DIR`` replays the gate on same-code runs already measured
there instead of measuring. The false-positive target is asserted, and so is the rough honesty of
the gate's own detectable effect (a slowdown of that size is caught in at least 90% of trials; it
is a normal-theory figure meant to give 95%). The detection target is asserted only
where this machine's noise lets the gate see 10% at all (its detectable effect with 3 candidate runs
is at most 10%); elsewhere the test is an expected failure that states the measured figures. The trials resample a fixed set of runs, so the runs, not the trials, bound how
precisely the rates are known: with R runs a rate of 0 means "below about 3/R per run drawn".
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.comparisons import across, gate
from harness.analysis.comparisons.gate import GatePolicy
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, Status
from harness.formulas import across_runs
from harness.formulas.across_runs import Run, RunFigure
from harness.formulas.verdicts import HIGHER, LOWER
from harness.results import history

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("HARNESS_AA_RUNS", "30"))
HISTORY = 20
TRIALS = 1000
SLOWDOWN = 1 / 1.10
CELLS = [
    "--model",
    "cnn,dense",
    "--strategy",
    "default",
    "--batch",
    "64",
    "--repeats",
    "5",
    "--window-s",
    "0.3",
    "--warmup-windows",
    "1",
    "--steps-per-execution",
    "10",
]
TARGET_FP, TARGET_DETECTION = 0.01, 0.95
HONEST_DETECTION = 0.90
"""A slowdown as large as the gate's detectable effect must be caught at least this often."""


def aa_rates(
    runs: Sequence[Run],
    candidate_runs: int,
    policy: GatePolicy,
    history_runs: int = HISTORY,
    trials: int = TRIALS,
    seed: int = 0,
    slowdown: float = SLOWDOWN,
) -> tuple[float, float, float]:
    """(false-positive rate, detection rate of the slowdown (a throughput factor; default 10%),
    median detectable effect) of the gate replayed on same-code ``runs``, each trial under the
    calibration set's spread pooled with its baseline runs (what ``compare`` does)."""
    rng = np.random.default_rng(seed)
    series = sorted(set.intersection(*(set(r.figures) for r in runs)))
    false_calls = detected = total = 0
    detectable = []
    for _ in range(trials):
        picked = rng.choice(len(runs), candidate_runs + history_runs, replace=False)
        cand, base = [runs[i] for i in picked[:candidate_runs]], [runs[i] for i in picked[candidate_runs:]]
        spread = across_runs.pooled(across_runs.CALIBRATION, [base])
        for cid in series:
            kind, _ = base[0].figures[cid]
            past = [r.figures[cid][1] for r in base]
            now = [r.figures[cid][1] for r in cand]
            same = gate.judge_series(cid, "aa", now, past, len(series), policy, spread, kind)
            slower = [RunFigure(f.value * slowdown, tuple(p * slowdown for p in f.processes)) for f in now]
            slow = gate.judge_series(cid, "aa", slower, past, len(series), policy, spread, kind)
            false_calls += same.change in (LOWER, HIGHER)
            detected += slow.change == LOWER
            detectable.append(same.detectable)
            total += 1
    return false_calls / total, detected / total, float(np.median(detectable))


def _measure(results: Path) -> None:
    for _ in range(RUNS):
        subprocess.run(
            [sys.executable, "-m", "harness", "run", "--results", str(results), *CELLS],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=600,
        )


def same_code_runs(results: Path) -> list[Run]:
    """The ok rows of every run in ``results``, one :class:`Run` each (what ``compare`` fits)."""
    cells, _ = history.load(results)
    ok = cells[(cells["status"] == Status.OK) & cells["examples_per_sec"].notna()]
    return across.runs_of(unflatten_all(CellRow, ok.to_dict("records")))


def test_gate_false_positives_and_detection(tmp_path: Path, benchmark: object) -> None:
    results = Path(os.environ.get("HARNESS_AA_RESULTS") or tmp_path / "results")
    if "HARNESS_AA_RESULTS" not in os.environ:
        _measure(results)
    same = same_code_runs(results)
    runs = len(same)
    medians = {c: [r.figures[c][1].value for r in same if c in r.figures] for c in same[0].figures}
    cv = {c.split("/")[0]: float(np.std(m, ddof=1) / np.mean(m)) for c, m in medians.items()}
    policy = GatePolicy()
    rates = {n: aa_rates(same, n, policy) for n in (1, 3)}
    at_detectable = {n: aa_rates(same, n, policy, slowdown=1 - mde)[1] for n, (_, _, mde) in rates.items()}
    for n, (fp, det, mde) in rates.items():
        print(
            f"\nA/A over {runs} runs x {len(medians)} cells, candidate {n} run(s) vs {HISTORY}: "
            f"false-positive rate {fp:.2%}, detection of a 10% slowdown {det:.1%}; median "
            f"detectable effect {mde:.1%}, detection of a slowdown that large "
            f"{at_detectable[n]:.1%}"
        )
    print("run-to-run CV of the medians: " + ", ".join(f"{c} {v:.1%}" for c, v in cv.items()))
    benchmark.extra_info.update(
        runs=RUNS,
        run_to_run_cv=cv,
        rates={
            n: {"false_positive_rate": fp, "detection_rate": det, "detectable_effect": mde}
            for n, (fp, det, mde) in rates.items()
        },
    )
    benchmark.pedantic(lambda: None, rounds=1)
    assert all(fp <= TARGET_FP for fp, _, _ in rates.values()), rates
    # the gate's own "detectable" figure is roughly honest: it is a normal-theory estimate, so on
    # bimodal run noise a slowdown that large is caught in somewhat fewer than 95% of trials
    assert all(d >= HONEST_DETECTION for d in at_detectable.values()), at_detectable
    _, detection, detectable = rates[3]
    if detectable > 1 - SLOWDOWN and detection < TARGET_DETECTION:
        pytest.xfail(
            f"run-to-run noise (CV {max(cv.values()):.0%}) puts the gate's detectable "
            f"effect at {detectable:.0%} with 3 candidate runs: a 10% slowdown was caught "
            f"in {detection:.0%} of trials (target {TARGET_DETECTION:.0%})"
        )
    assert detection >= TARGET_DETECTION, rates
