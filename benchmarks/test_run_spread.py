"""The variance model across runs checked on the project's calibration set (benchmarks/run-spread/):
the constant in the code is the set's fit, A/A pairs read as one machine, and a CPU quota reads as
a slower one. Each check compares one run per side, the case of one ``nox -s bench`` per machine.

    python -m pytest benchmarks/test_run_spread.py -s     # prints the calibration table

Reads the packs only (no TensorFlow run, about a minute). A pair's own runs are part of the fit
its CIs use: with few pairs in the set a pair left out would leave too little to fit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest

from benchmarks import run_spread
from harness.analysis.comparisons import across
from harness.contract.records import CellRow
from harness.formulas import across_runs
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

SET, RUNGS = run_spread.read()
SPREAD = run_spread.derive()


def verdicts(a: Sequence[CellRow], b: Sequence[CellRow]) -> dict[str, across.Versus]:
    """Cell id -> run a against run b, one run a side, under the calibration."""
    mine, theirs = ({r.cell.cell_id: r for r in rows} for rows in (a, b))
    return {
        cid: across.versus(cid, across.side([r], SPREAD), across.side([theirs[cid]], SPREAD))
        for cid, r in mine.items()
        if cid in theirs
    }


def share(found: dict[str, across.Versus], verdict: str) -> float:
    return sum(v.verdict == verdict for v in found.values()) / len(found)


def table_line(what: str, found: dict[str, across.Versus]) -> str:
    held = sum(v.ratio.low <= 1 <= v.ratio.high for v in found.values()) / len(found)
    shares = ", ".join(f"{x} {share(found, x):.0%}" for x in (HIGHER, LOWER, EQUIVALENT, UNDECIDED))
    return f"{what}: {len(found)} configurations; {shares}; CI holds 1.0 for {held:.0%}"


def test_the_constant_is_the_fit_of_the_set() -> None:
    assert run_spread.literal(across_runs.CALIBRATION) == run_spread.literal(SPREAD)


@pytest.mark.parametrize("machine", list(SET))
def test_a_a_pairs_read_as_one_machine(machine: str) -> None:
    """Over the machine's A/A pairs, the ratio CI holds 1.0 for at least 90% of configurations of
    each kind, and at most 5% are called higher or lower. Pooled over the pairs, each printed: a
    pair's configurations share its run-wide shift, so one pair's share is not a draw of
    independent trials (a pair whose shift lies 2 sd out misses about one configuration in six
    even when the model is right)."""
    held: dict[str, list[bool]] = {}
    called = []
    for i, j in itertools.combinations(range(len(SET[machine])), 2):
        found = verdicts(SET[machine][i], SET[machine][j])
        print(table_line(f"A/A {machine}, runs {i} and {j}", found))
        rows = {r.cell.cell_id: r for r in SET[machine][i]}
        for cid, v in found.items():
            held.setdefault(across.kind(rows[cid]), []).append(v.ratio.low <= 1 <= v.ratio.high)
            called.append(v.verdict in (HIGHER, LOWER))
    for kind, each in held.items():
        print(f"  {kind}: CI holds 1.0 for {sum(each) / len(each):.1%} of {len(each)}")
        assert sum(each) / len(each) >= 0.9, kind
    print(f"  called higher or lower: {sum(called) / len(called):.1%} of {len(called)}")
    assert sum(called) / len(called) <= 0.05


def test_the_pairs_run_wide_shifts_agree_with_the_fitted_variance() -> None:
    """Each pair's mean log ratio over its configurations against sqrt(2 S + the rest / n): the
    sum of squared z-scores of the independent pairs (one per machine's consecutive runs) is
    inside the chi-square's 99% range."""
    z2, df = 0.0, 0
    for runs in SET.values():
        for a, b in itertools.pairwise(runs):
            found = verdicts(a, b)
            logs = [math.log(v.ratio.value) for v in found.values()]
            mean = sum(logs) / len(logs)
            noise = sum((math.log(v.ratio.high / v.ratio.low) / 3.92) ** 2 for v in found.values()) / len(
                logs
            )
            z2 += mean**2 / (2 * SPREAD.part(across_runs.SHIFT).variance + noise / len(logs))
            df += 1
    from scipy import stats

    assert z2 <= stats.chi2.ppf(0.995, df), (z2, df)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: f"{r.cpus:g} CPUs")
def test_a_cpu_quota_reads_as_a_slower_machine(rung: run_spread.Rung) -> None:
    """None is called higher; at 1 CPU of 2 every configuration is lower; on every rung the plain
    script's ratio lies inside the suite's CI for the plain custom loop."""
    found = verdicts(rung.rows, SET[rung.machine][0])
    print(table_line(f"{rung.cpus:g} CPUs against the whole machine", found))
    assert share(found, HIGHER) == 0
    if rung.cpus <= 1:
        assert share(found, LOWER) == 1
    for model, ratio in rung.script.items():
        plain = found[run_spread.PLAIN.format(model=model)]
        r = plain.ratio
        print(f"  {model} plain loop: suite {r.value:.3f} [{r.low:.3f}, {r.high:.3f}], script {ratio:.3f}")
        assert r.low <= ratio <= r.high


@pytest.mark.parametrize("rung", [r for r in RUNGS if r.cpus > 1], ids=lambda r: f"{r.cpus:g} CPUs")
def test_one_run_a_side_decides_a_quota_of_1_7_cpus(rung: run_spread.Rung) -> None:
    """The precision targets: each model's plain custom loop lower where the plain script measures
    12% or more, and at least 80% of configurations lower, one run a side. Not met (2026-12-07,
    Zen 3): the quota slows the CNN by 13% and the dense model by 8% (the script's own 95% CI 0.82
    to 1.03), while one run a side gives a CI of about ±13% there."""
    found = verdicts(rung.rows, SET[rung.machine][0])
    plain = [found[run_spread.PLAIN.format(model=m)] for m, x in rung.script.items() if x <= 1 / 1.12]
    missed = [v.group for v in plain if v.verdict != LOWER]
    if missed or share(found, LOWER) < 0.8:
        pytest.xfail(
            f"{share(found, LOWER):.0%} lower at {rung.cpus:g} CPUs; plain loops not lower: {missed}"
        )


def test_the_set_says_how_each_run_was_made() -> None:
    readme = (run_spread.SET.parent / "README.md").read_text()
    for machine in SET:
        assert machine in readme
    for rung in RUNGS:
        assert f"{rung.cpus:g} CPUs" in readme
