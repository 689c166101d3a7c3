"""A cell with a co-tenant from another framework: its figures from one instance's turns, their CIs
over processes, and its kept shares from the SHARED ratios."""

from __future__ import annotations

import pytest

from harness.contract.records import Status
from harness.formulas.turns import Turn
from harness.results.ratios import with_turn_ratios
from harness.results.rows import ProcessResult, flops_note, shared_columns, shared_figures
from harness.spec.frameworks import tenant_key, together_key

KEY = "cnn/default/r1w1+jax/b64/acc1/ctl/spe10/float32/synthetic/weak"
TENANT = tenant_key(KEY, "jax")
FACTS = {"framework": "jax", "version": "0.10.2", "device": "cpu:0", "flops_per_example": 14256384}
ROW = {"status": Status.OK, "effective_batch": 64, "flops_per_example": 14256384, "cell_id": KEY}


def _turns(block: int, rates: dict[str, float], other: float = 0.0) -> list[Turn]:
    """Two turns per key in a block, each of 640 examples at the given examples/s."""
    return [Turn(block, key, 640 / rate, 640, other) for key, rate in rates.items() for _ in range(2)]


RATES = {KEY: 1000.0, TENANT: 800.0, together_key(KEY): 600.0, together_key(TENANT): 320.0}


def test_each_side_alone_and_together_from_the_turns():
    row = shared_columns(ROW, _turns(0, RATES) + _turns(1, RATES), KEY, TENANT, FACTS)
    assert row["examples_per_sec"] == pytest.approx(600.0)
    assert row["optimizer_updates_per_sec"] == pytest.approx(600.0 / 64)
    assert row["alone_examples_per_sec"] == pytest.approx(1000.0)
    assert row["tenant_alone_examples_per_sec"] == pytest.approx(800.0)
    assert row["tenant_together_examples_per_sec"] == pytest.approx(320.0)
    assert row["interference_ratio"] == pytest.approx(0.6 + 0.4)
    assert row["tenant_framework_version"] == "jax 0.10.2"
    assert row["tenant_flops_note"].startswith("equal to the TensorFlow side's count (14,256,384")


def test_a_disturbed_block_is_left_out_where_a_clean_one_is_left():
    slow = {k: v / 2 for k, v in RATES.items()}
    row = shared_columns(ROW, _turns(0, RATES) + _turns(1, slow, other=5.0), KEY, TENANT, FACTS)
    assert row["alone_examples_per_sec"] == pytest.approx(1000.0)


def test_a_failed_process_gets_the_co_tenant_facts_but_no_figure():
    row = shared_columns({**ROW, "status": Status.FAILED}, _turns(0, RATES), KEY, TENANT, FACTS)
    assert "examples_per_sec" not in row and row["tenant_device"] == "cpu:0"


def test_flops_note_says_how_far_the_counts_differ():
    assert flops_note(None, 10) == "not compared: a count is missing"
    assert "+10.00%" in flops_note(11, 10)


def test_figures_over_processes_get_a_ci_only_when_every_process_has_one():
    results = [
        ProcessResult({"alone_examples_per_sec": v, "interference_ratio": 1.0 + v / 1e4}, [], i)
        for i, v in enumerate((900.0, 1000.0, 1100.0))
    ]
    out = shared_figures(results)
    assert out["alone_examples_per_sec"] == pytest.approx(1000.0)
    assert out["alone_examples_per_sec_ci_low"] < 1000.0 < out["alone_examples_per_sec_ci_high"]
    assert "tenant_alone_examples_per_sec" not in out
    assert shared_figures([ProcessResult({}, [], 0)]) == {}


def test_kept_shares_come_from_the_shared_ratios():
    ratio = {"relation": "shared", "ratio": 0.6, "ratio_ci_low": 0.58, "ratio_ci_high": 0.62}
    rows = [
        {**ratio, "subject": together_key(KEY), "reference": KEY},
        {**ratio, "subject": together_key(TENANT), "reference": TENANT, "ratio": 0.4},
    ]
    out = with_turn_ratios({**ROW, "tenant_framework": "jax"}, rows)
    assert out["shared_ratio"] == 0.6 and out["shared_ratio_ci_low"] == 0.58
    assert out["tenant_shared_ratio"] == 0.4
    assert "shared_ratio" not in with_turn_ratios({**ROW, "tenant_framework": "none"}, rows)


def test_windows_are_tagged_by_side_and_kind():
    from harness.results.rows import shared_windows

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
