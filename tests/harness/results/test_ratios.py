"""The ratios table's rows and the cell-row figures that come from turns (pure, literal numbers)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from harness.contract.columns import Estimate, flatten
from harness.contract.records import CellRow, RunInfo, Status
from harness.errors import HarnessError
from harness.results.measurement import cell_row
from harness.results.ratios import Evidence, ratio_rows, with_turn_ratios
from harness.spec.cell import Cell
from harness.spec.groups import Comparison, Relation
from harness.spec.protocol import Protocol

RUN = RunInfo(run_id="r", suite_version="v", timestamp="t")
BASE = {"run_id": "r", "suite_version": "v", "timestamp": "t", "fingerprint": "fp"}
"""The columns a run's ratio rows share with its cell rows (besides resumes)."""
SCALING = Comparison(Relation.SCALING, "two", "one", 0.5)
OP = Comparison(Relation.CROSS_DEVICE_OPS, "two[h]", "two", 1.0)


def _cell_row(cell_id: str, status: Status) -> CellRow:
    """A row of a cell whose id is ``cell_id``."""
    r = cell_row(Cell(strategy="mirrored", replicas=2), Protocol())
    return replace(r, cell=replace(r.cell, cell_id=cell_id), status=status)


def test_rows_carry_the_ratio_its_ci_and_an_fdr_verdict() -> None:
    logs = (math.log(1.8), math.log(1.82), math.log(1.79), math.log(1.81))
    same = (0.01, -0.01, 0.005, -0.004)
    rows = ratio_rows(
        [Evidence(SCALING, "g0", logs, (), 30.0), Evidence(OP, "g0", same, (), 30.0)], RUN, "fp", 6, 0.2
    )
    scaling, op = rows
    assert scaling.ratio.value == pytest.approx(0.5 * math.exp(sum(logs) / 4))
    assert scaling.ratio.low < scaling.ratio.value < scaling.ratio.high
    assert scaling.verdict == "higher" and scaling.decided and scaling.extra_instances == 0
    assert op.verdict == "equivalent" and op.decided  # CI inside +-5 %
    assert scaling.run.run_id == "r" and scaling.blocks == 6 and scaling.turn_s == 0.2


def test_the_minimum_effect_decides_what_a_verdict_calls_and_is_recorded() -> None:
    three = (math.log(1.03), math.log(1.031), math.log(1.029), math.log(1.03))  # +3 %, tight
    (default,) = ratio_rows([Evidence(OP, "g0", three, (), 30.0)], RUN, "fp", 6, 0.2)
    (strict,) = ratio_rows([Evidence(OP, "g0", three, (), 30.0)], RUN, "fp", 6, 0.2, min_effect=0.02)
    assert default.verdict == "equivalent" and default.min_effect == 0.05  # inside +-5 %
    assert strict.verdict == "higher" and strict.min_effect == 0.02  # beyond 2 %
    with pytest.raises(HarnessError, match=r"--min-effect=0\.0; expected a fraction in"):
        Protocol(min_effect=0.0)


def test_the_ratio_rows_share_the_run_and_fingerprint_with_the_cell_rows() -> None:
    run = RunInfo(run_id="r", timestamp="t", suite_version="v", resumes=2)
    (row,) = ratio_rows([Evidence(OP, "g1", (0.01, 0.02), (), 1.0)], run, "fp", 6, 0.2)
    assert row.run == run and row.fingerprint == "fp"
    columns = flatten(row)
    assert {k: columns[k] for k in (*BASE, "resumes")} == {**BASE, "resumes": 2}
    (row,) = ratio_rows([Evidence(OP, "g1", (0.01, 0.02), (), 1.0)], run, None, 6, 0.2)
    assert row.run.run_id == "r" and row.run.resumes == 2 and row.fingerprint is None


def test_an_undecided_ratio_says_what_would_decide_it() -> None:
    logs = (0.02, 0.09, -0.03)  # mean 2.7 %, wide: neither beyond nor within 5 %
    (row,) = ratio_rows([Evidence(OP, "g1", logs, (), 40.0)], RUN, "fp", 6, 0.2)
    assert not row.decided and row.verdict == "undecided"
    assert row.extra_instances > 0 and row.extra_s == pytest.approx(40.0 * row.extra_instances)


def test_a_ratio_the_false_discovery_control_holds_back_is_undecided_with_more_to_come() -> None:
    clear = (0.10, 0.15, 0.05, 0.12)  # p 0.015, CI [1.04, 1.19]: decided on its own
    flat = (0.01, -0.01, 0.02, -0.02)  # five of them: p near 1
    rows = ratio_rows(
        [Evidence(OP, "g0", clear, (), 10.0)] + [Evidence(OP, "g0", flat, (), 10.0)] * 5, RUN, "fp", 6, 0.2
    )
    assert rows[0].ratio.low > 1.0 and rows[0].p_value > 0.05 / 6  # over BH's first step
    assert rows[0].verdict == "undecided" and rows[0].extra_instances >= 1


def test_the_cell_row_takes_scaling_efficiency_from_turns() -> None:
    (ratio,) = ratio_rows([Evidence(SCALING, "g0", (0.6, 0.62, 0.61), (), 1.0)], RUN, "fp", 6, 0.2)
    ok = _cell_row("two", Status.OK)
    ok = replace(ok, efficiency=replace(ok.efficiency, scaling_efficiency=Estimate(0.1)))
    eff = with_turn_ratios(ok, [ratio]).efficiency
    assert eff.scaling_efficiency.value == ratio.ratio.value and eff.baseline_cell_id == "one"
    assert (eff.scaling_efficiency.low, eff.scaling_efficiency.high) == (ratio.ratio.low, ratio.ratio.high)
    assert eff.ratio_instances == 3
    failed = _cell_row("two", Status.FAILED)
    assert with_turn_ratios(failed, [ratio]) == failed
