"""A cell trained in this process (``tf``: the dense model on the CPU): the seed loss a timed
process records is the loss ``verify`` reaches after the same updates, and ``verify``'s check across
precisions passes bfloat16 against float32."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract.job import WorkerOptions
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol


@pytest.mark.tf
def test_the_seed_loss_is_verify_s_loss_and_bfloat16_agrees_with_float32(tmp_path: Path) -> None:
    import keras

    from harness.analysis.run.verdicts import Outcome, judge
    from harness.results.measurement import cell_row
    from harness.spec.training import same_updates
    from harness.worker.measure import build_cell, verify_cell
    from harness.worker.timing import first_call

    f32 = Cell(model="dense", strategy="default", batch=32, steps_per_execution=2)
    bf16 = Cell(
        model="dense", strategy="default", batch=32, steps_per_execution=2, precision="mixed_bfloat16"
    )
    updates = same_updates(2)
    outcomes = []
    for cell in (f32, bf16):
        options = WorkerOptions.of(
            Protocol(), Platform(), tmp_path, verify_updates=updates, weights_dir=str(tmp_path)
        )
        row, report = verify_cell(cell_row(cell, Protocol()), cell, options, ["/cpu:0"])
        outcomes.append(
            Outcome(cell, str(row.status), row.reason, row.checks.final_loss, "", report["weights_path"])
        )
        _, seed_loss = first_call(build_cell(cell, ["/cpu:0"]).trainer.run, 2, lambda: 0.0)
        assert seed_loss == pytest.approx(row.checks.final_loss, rel=1e-6), cell.precision
    keras.mixed_precision.set_dtype_policy("float32")  # as run_cell leaves it, for the tests after
    (across,) = [v for v in judge(outcomes) if v.across]
    assert across.agrees is True, (across.loss_rel, across.weights_rel)
    assert 0 < across.weights_rel < across.tolerance  # bfloat16 rounds: not the same bits
