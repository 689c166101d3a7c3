"""A cell with a co-tenant from another framework: its figures from one instance's turns, their CIs
over processes, and its kept shares from the SHARED ratios."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.contract.columns import Estimate
from harness.contract.records import Foreign, RatioRow, Status
from harness.formulas.turns import Turn
from harness.results.aggregate import ProcessResult, flops_note, shared_figures, shared_windows, with_shared
from harness.results.measurement import cell_row
from harness.results.ratios import with_turn_ratios
from harness.spec.cell import Cell
from harness.spec.frameworks import tenant_key, together_key
from harness.spec.groups import Relation
from harness.spec.protocol import Protocol

KEY = "cnn/default/r1w1+jax/b64/acc1/ctl/spe10/float32/synthetic/weak"
TENANT = tenant_key(KEY, "jax")
FACTS = {"framework": "jax", "version": "0.10.2", "device": "cpu:0", "flops_per_example": 14256384}
CELL = Cell(model="cnn", strategy="default", batch=64, tenant_framework="jax")
ROW = replace(cell_row(CELL, Protocol()), status=Status.OK)


def test_the_row_is_the_cell_of_the_key():
    assert ROW.cell.cell_id == KEY and ROW.cell.effective_batch == 64
    assert ROW.flops.flops_per_example == 14256384


def _turns(block: int, rates: dict[str, float], other: float = 0.0) -> list[Turn]:
    """Two turns per key in a block, each of 640 examples at the given examples/s."""
    return [Turn(block, key, 640 / rate, 640, other) for key, rate in rates.items() for _ in range(2)]


RATES = {KEY: 1000.0, TENANT: 800.0, together_key(KEY): 600.0, together_key(TENANT): 320.0}


def test_each_side_alone_and_together_from_the_turns():
    row = with_shared(ROW, _turns(0, RATES) + _turns(1, RATES), KEY, TENANT, FACTS)
    assert row.examples_per_sec.value == pytest.approx(600.0)
    assert row.updates.optimizer_updates_per_sec == pytest.approx(600.0 / 64)
    f = row.foreign
    assert f.alone_examples_per_sec.value == pytest.approx(1000.0)
    assert f.tenant_alone_examples_per_sec.value == pytest.approx(800.0)
    assert f.tenant_together_examples_per_sec.value == pytest.approx(320.0)
    assert f.interference_ratio.value == pytest.approx(0.6 + 0.4)
    assert f.tenant_framework_version == "jax 0.10.2"
    assert f.tenant_flops_note is not None
    assert f.tenant_flops_note.startswith("equal to the TensorFlow side's count (14,256,384")


def test_a_disturbed_block_is_left_out_where_a_clean_one_is_left():
    slow = {k: v / 2 for k, v in RATES.items()}
    row = with_shared(ROW, _turns(0, RATES) + _turns(1, slow, other=5.0), KEY, TENANT, FACTS)
    assert row.foreign.alone_examples_per_sec.value == pytest.approx(1000.0)


def test_a_failed_process_gets_the_co_tenant_facts_but_no_figure():
    row = with_shared(replace(ROW, status=Status.FAILED), _turns(0, RATES), KEY, TENANT, FACTS)
    assert row.examples_per_sec == Estimate() and row.foreign.tenant_device == "cpu:0"
    assert row.foreign.alone_examples_per_sec == Estimate()


def test_flops_note_says_how_far_the_counts_differ():
    assert flops_note(None, 10) == "not compared: a count is missing"
    assert "+10.00%" in flops_note(11, 10)


def test_figures_over_processes_get_a_ci_only_when_every_process_has_one():
    results = [
        ProcessResult(
            replace(
                ROW,
                foreign=Foreign(
                    alone_examples_per_sec=Estimate(v), interference_ratio=Estimate(1.0 + v / 1e4)
                ),
            ),
            [],
            i,
        )
        for i, v in enumerate((900.0, 1000.0, 1100.0))
    ]
    out = shared_figures(Foreign(), results)
    alone = out.alone_examples_per_sec
    assert alone.value == pytest.approx(1000.0)
    assert alone.low is not None and alone.high is not None and alone.low < 1000.0 < alone.high
    assert out.tenant_alone_examples_per_sec == Estimate()
    assert shared_figures(Foreign(), [ProcessResult(ROW, [], 0)]) == Foreign()


def _shared(subject: str, reference: str, ratio: Estimate) -> RatioRow:
    """A SHARED ratio measured in turns (its bookkeeping columns neutral)."""
    return RatioRow(
        relation=Relation.SHARED,
        subject=subject,
        reference=reference,
        group="g0",
        ratio=ratio,
        scale=1.0,
        instances=3,
        blocks=6,
        turn_s=0.2,
        verdict="lower",
        decided=True,
        dropped_instances=0,
        note="",
        disturbed_blocks=0,
    )


def test_kept_shares_come_from_the_shared_ratios():
    rows = [
        _shared(together_key(KEY), KEY, Estimate(0.6, 0.58, 0.62)),
        _shared(together_key(TENANT), TENANT, Estimate(0.4, 0.58, 0.62)),
    ]
    assert ROW.cell.tenant_framework == "jax"
    out = with_turn_ratios(ROW, rows).foreign
    assert out.shared_ratio.value == 0.6 and out.shared_ratio.low == 0.58
    assert out.tenant_shared_ratio.value == 0.4
    alone = replace(ROW, cell=replace(ROW.cell, tenant_framework="none"))
    assert with_turn_ratios(alone, rows).foreign.shared_ratio == Estimate()


def test_windows_are_tagged_by_side_and_kind():

    turns = _turns(0, RATES)
    ours = [{"cell_id": KEY, "worker": 0, "repeat": i, "window_s": 0.1, "examples": 640} for i in range(4)]
    out = shared_windows(ours, turns, KEY, TENANT, "jax", 64)
    tf, jax = out[:4], out[4:]
    assert [w["framework"] for w in tf] == ["tensorflow"] * 4
    assert [w["shared"] for w in tf] == [False, False, True, True]  # in the order the turns came
    assert [w["framework"] for w in jax] == ["jax"] * 4 and [w["shared"] for w in jax] == [
        False,
        False,
        True,
        True,
    ]
    assert (
        jax[0]["worker"] == 1
        and jax[0]["window_steps"] == 10
        and jax[0]["examples_per_sec"] == pytest.approx(800.0)
    )
    assert shared_windows(ours[:3], turns, KEY, TENANT, "jax", 64)[0].get("shared") is None  # counts differ
