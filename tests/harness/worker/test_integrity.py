"""The integrity check flags a model built outside the strategy scope (in-process, one device)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from harness.worker.build.models import MODELS
from harness.worker.checks import integrity


def _mirrored() -> object:
    return tf.distribute.MirroredStrategy(["/cpu:0"])


def test_model_built_in_scope_passes() -> None:
    strategy = _mirrored()
    with strategy.scope():
        model = MODELS["dense"].build()
        optimizer = keras.optimizers.SGD(0.01)
    assert integrity.check(strategy, "mirrored", model, optimizer, 1, 0.5) == []


def test_model_built_outside_scope_is_flagged() -> None:
    strategy = _mirrored()
    model = MODELS["dense"].build()  # on purpose: outside strategy.scope()
    with strategy.scope():
        optimizer = keras.optimizers.SGD(0.01)
    problems = integrity.check(strategy, "mirrored", model, optimizer, 1, 0.5)
    assert len(problems) == 1
    assert "not MirroredVariable" in problems[0] and "outside strategy.scope()" in problems[0]
    assert "model variable" in problems[0] and "ResourceVariable" in problems[0]


def test_replica_count_and_loss_are_checked() -> None:
    strategy = _mirrored()
    with strategy.scope():
        model = MODELS["dense"].build()
        optimizer = keras.optimizers.SGD(0.01)
    problems = integrity.check(strategy, "mirrored", model, optimizer, 2, float("nan"))
    assert any("num_replicas_in_sync is 1, expected 2" in p for p in problems)
    assert any("final loss is nan" in p for p in problems)


def test_iterations_must_match_the_updates_run() -> None:
    strategy = _mirrored()
    with strategy.scope():
        model = MODELS["dense"].build()
        optimizer = keras.optimizers.SGD(0.01)
        optimizer.build(model.trainable_variables)
    assert integrity.check(strategy, "mirrored", model, optimizer, 1, 1.0, updates=0) == []
    problems = integrity.check(strategy, "mirrored", model, optimizer, 1, 1.0, updates=3)
    assert problems == ["optimizer.iterations is 0 after 3 updates"]


def test_idle_parameter_server_worker_is_named() -> None:
    assert integrity.idle_workers([[10, 0], [0, 10]]) == []  # one idle window is chance
    assert integrity.idle_workers([[10, 10], [0, 0]]) == [
        ("worker 1 ran no update in the timed windows (hung or failed; the coordinator scheduled "
         "around it)")]
