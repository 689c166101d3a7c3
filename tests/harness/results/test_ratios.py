"""The ratios table's rows and the cell-row columns that come from turns (pure, literal numbers)."""

from __future__ import annotations

import math

import pytest

from harness.results.ratios import Measured, ratio_rows, with_turn_ratios
from harness.spec.groups import Comparison, Relation

BASE = {"run_id": "r", "suite_version": "v", "timestamp": "t", "fingerprint": "fp"}
SCALING = Comparison(Relation.SCALING, "two", "one", 0.5)
OP = Comparison(Relation.CROSS_DEVICE_OPS, "two[h]", "two", 1.0)


def test_rows_carry_the_ratio_its_ci_and_an_fdr_verdict() -> None:
    logs = (math.log(1.8), math.log(1.82), math.log(1.79), math.log(1.81))
    same = (0.01, -0.01, 0.005, -0.004)
    rows = ratio_rows(
        [Measured(SCALING, "g0", logs, (), 30.0), Measured(OP, "g0", same, (), 30.0)], BASE, 6, 0.2
    )
    scaling, op = rows
    assert scaling["ratio"] == pytest.approx(0.5 * math.exp(sum(logs) / 4))
    assert scaling["ratio_ci_low"] < scaling["ratio"] < scaling["ratio_ci_high"]
    assert scaling["verdict"] == "higher" and scaling["decided"] and scaling["extra_instances"] == 0
    assert op["verdict"] == "equivalent" and op["decided"]  # CI inside +-5 %
    assert scaling["run_id"] == "r" and scaling["blocks"] == 6 and scaling["turn_s"] == 0.2


def test_an_undecided_ratio_says_what_would_decide_it() -> None:
    logs = (0.02, 0.09, -0.03)  # mean 2.7 %, wide: neither beyond nor within 5 %
    (row,) = ratio_rows([Measured(OP, "g1", logs, (), 40.0)], BASE, 6, 0.2)
    assert not row["decided"] and row["verdict"] == "undecided"
    assert row["extra_instances"] > 0 and row["extra_s"] == pytest.approx(40.0 * row["extra_instances"])


def test_a_ratio_the_false_discovery_control_holds_back_is_undecided_with_more_to_come() -> None:
    clear = (0.10, 0.15, 0.05, 0.12)  # p 0.015, CI [1.04, 1.19]: decided on its own
    flat = (0.01, -0.01, 0.02, -0.02)  # five of them: p near 1
    rows = ratio_rows(
        [Measured(OP, "g0", clear, (), 10.0)] + [Measured(OP, "g0", flat, (), 10.0)] * 5, BASE, 6, 0.2
    )
    assert rows[0]["ratio_ci_low"] > 1.0 and rows[0]["p_value"] > 0.05 / 6  # over BH's first step
    assert rows[0]["verdict"] == "undecided" and rows[0]["extra_instances"] >= 1


def test_the_cell_row_takes_scaling_efficiency_from_turns() -> None:
    (ratio,) = ratio_rows([Measured(SCALING, "g0", (0.6, 0.62, 0.61), (), 1.0)], BASE, 6, 0.2)
    row = with_turn_ratios({"cell_id": "two", "status": "ok", "scaling_efficiency": 0.1}, [ratio])
    assert row["scaling_efficiency"] == ratio["ratio"] and row["baseline_cell_id"] == "one"
    assert row["ratio_instances"] == 3
    failed = {"cell_id": "two", "status": "failed"}
    assert with_turn_ratios(failed, [ratio]) == failed
