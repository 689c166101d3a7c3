"""The reduction count per update (no TensorFlow: the counter's arithmetic on traced calls), and
the jit_compile each loop reports (``tf``: a tiny cell built and trained on the CPU)."""

from __future__ import annotations

import pytest

from harness.worker.training.loops import ReductionCounter


def _counter(
    micro: int, apply: int, loss: int, updates_traced: int, calls_traced: int, local_replicas: int = 2
) -> ReductionCounter:
    c = ReductionCounter(
        updates_traced=updates_traced, calls_traced=calls_traced, local_replicas=local_replicas
    )
    c.calls.update(micro=micro, apply=apply, loss=loss)
    return c


def test_gradients_once_per_update_and_the_loss_once_per_call():
    # mirrored on 2 replicas, spe 5: one trace of the update (per replica), one of the call
    c = _counter(micro=0, apply=1, loss=1, updates_traced=2, calls_traced=1)
    assert c.per_update(accum_steps=1, steps_per_execution=5) == pytest.approx(1.2)
    assert c.per_update(accum_steps=1, steps_per_execution=1) == pytest.approx(2.0)


def test_accumulation_reduces_once_per_update_not_per_micro_batch():
    c = _counter(micro=0, apply=1, loss=1, updates_traced=2, calls_traced=1)
    assert c.per_update(accum_steps=4, steps_per_execution=10) == pytest.approx(1.1)


def test_fit_makes_no_loss_reduce_of_its_own_and_untraced_is_none():
    assert _counter(0, 1, 0, 2, 0).per_update(1, 1) == 1.0
    assert ReductionCounter().per_update(1, 1) is None


@pytest.mark.tf
@pytest.mark.parametrize("strategy", ["default", "mirrored"])
def test_fit_and_ctl_report_the_same_jit_compile_as_built(strategy):
    # Keras's "auto" would differ between the default strategy and mirrored on a GPU; on the CPU it
    # is off anyway, so this checks the reported value and that both loops report it.
    from harness.spec.cell import Cell
    from harness.worker.measure import build_cell

    reported = {}
    for loop in ("ctl", "fit"):
        cell = Cell(model="dense", strategy=strategy, batch=8, loop=loop, steps_per_execution=1)
        trainer = build_cell(cell, ["/cpu:0"]).trainer
        before = trainer.jit_compile()
        trainer.run(1)  # fit builds its train function in its first call
        reported[loop] = (before, trainer.jit_compile())
    assert reported == {"ctl": (False, False), "fit": (False, False)}
    assert cell.jit_compile is False


@pytest.mark.tf
def test_jit_compile_on_compiles_each_update_of_either_loop():
    # --jit-compile on: both loops build with XLA and run (ctl compiles each replica's update, not
    # the call that reads the iterator: XLA has no kernel for IteratorGetNext).
    from harness.spec.cell import Cell
    from harness.worker.measure import build_cell

    for loop in ("ctl", "fit"):
        cell = Cell(model="dense", strategy="default", batch=8, loop=loop, steps_per_execution=2, xla="on")
        trainer = build_cell(cell, ["/cpu:0"]).trainer
        assert trainer.jit_compile() is True
        assert trainer.run(2) > 0
        assert trainer.jit_compile() is True, loop


@pytest.mark.tf
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_optimizer_axis_builds_that_keras_optimizer_at_the_shared_rate(optimizer):
    from harness.spec.cell import Cell
    from harness.spec.training import LEARNING_RATE
    from harness.worker.measure import build_cell

    cell = Cell(model="dense", strategy="mirrored", batch=8, steps_per_execution=2, optimizer=optimizer)
    built = build_cell(cell, ["/cpu:0"])
    assert type(built.optimizer).__name__.lower() == optimizer
    assert float(built.optimizer.learning_rate.numpy()) == pytest.approx(LEARNING_RATE)
    assert built.trainer.run(2) > 0
    # Adam keeps two slot variables per weight, plain SGD none
    slots = len(built.optimizer.variables) - len([v for v in built.optimizer.variables if v.shape == ()])
    assert slots == (2 * len(built.model.trainable_variables) if optimizer == "adam" else 0)
