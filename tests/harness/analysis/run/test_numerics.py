"""The answer's line on what a precision change does to numerics, over literal rows."""

from __future__ import annotations

from harness.analysis.run import answer
from harness.analysis.run.numerics import ACROSS, numerics_line
from harness.contract.columns import Estimate, unflatten_all
from harness.contract.records import CellRow, RatioRow
from harness.spec.groups import Relation


def _row(cell_id: str, precision: str, seed_loss: float | None, **axes: object) -> CellRow:
    flat = {
        "cell_id": cell_id,
        "status": "ok",
        "model": "cnn",
        "strategy": "default",
        "per_replica_batch": 64,
        "steps_per_execution": 10,
        "precision": precision,
        "seed_loss": seed_loss,
        "seed_updates": None if seed_loss is None else 10,
        "examples_per_sec": 100.0,
        **axes,
    }
    return unflatten_all(CellRow, [flat])[0]


def _line(*rows: CellRow) -> str | None:
    return numerics_line(rows, [answer.values(r.cell) for r in rows])


def test_the_leader_and_its_float32_twin_side_by_side_with_the_command_that_checks_them() -> None:
    lead = _row("lead", "mixed_bfloat16", 2.3117838)
    twin = _row("twin", "float32", 2.3118424)
    line = _line(lead, twin)
    assert line is not None and line.startswith(
        "Numerics: mixed precision (bfloat16) reached loss 2.31178 after the same 10 updates from "
        "the run's seed where float32 reached 2.31184 (0.0025% apart"
    )
    assert (
        "`python -m harness verify --model cnn --strategy default --precision float32,mixed_bfloat16`" in line
    )
    assert f"({ACROSS['mixed_bfloat16', 'sgd']:.0%})" in line
    assert _line(twin, lead) == line  # whichever leads


def test_with_adam_the_line_says_verify_shows_the_difference_unjudged() -> None:
    adam = {"optimizer": "adam"}
    line = _line(_row("lead", "mixed_bfloat16", 2.97, **adam), _row("twin", "float32", 3.53, **adam))
    assert line is not None and "(16% apart" in line
    assert (
        "--precision float32,mixed_bfloat16 --optimizer adam` shows it beside the weights' change, unjudged"
        in line
    )


def test_no_line_without_a_pair_that_differs_only_in_precision_and_recorded_its_seed_loss() -> None:
    lead = _row("lead", "mixed_bfloat16", 2.31)
    assert _line(lead, _row("acc", "float32", 2.31, accum_steps=4)) is None  # differs in more
    assert _line(lead, _row("old", "float32", None)) is None  # a row from before the column
    assert _line(lead, _row("f16", "mixed_float16", 2.31)) is None  # no float32 among them
    assert _line(_row("a", "float32", 2.31), _row("b", "float32", 2.31, accum_steps=4)) is None
    ps = {"strategy": "parameter_server", "workers": 2, "ps": 1}
    assert _line(_row("p", "mixed_bfloat16", 2.3, **ps), _row("q", "float32", 2.3, **ps)) is None


def test_the_answer_says_it_after_the_contenders() -> None:
    rows = [_row("lead", "mixed_bfloat16", 2.30), _row("twin", "float32", 2.32)]
    ratio = RatioRow(
        relation=Relation.FASTEST,
        subject="twin",
        reference="lead",
        group="g0",
        ratio=Estimate(0.5, 0.45, 0.55),
        scale=1.0,
        instances=5,
        blocks=4,
        turn_s=0.2,
        verdict="lower",
        decided=True,
        dropped_instances=0,
        note="",
        disturbed_blocks=0,
    )
    text = answer.text(answer.answers(rows, [ratio]), rows)
    slower = text.index("Slower than it:")
    assert slower < text.index("Numerics: mixed precision (bfloat16) reached loss 2.3 ") < text.index("Why:")
    assert "float32 reached 2.32 (0.86% apart" in text
