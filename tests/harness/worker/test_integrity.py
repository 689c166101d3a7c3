"""The integrity check flags a model built outside the strategy scope (in-process, one device;
TensorFlow is imported inside the tests that need it: tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.spec.cell import Cell
from harness.worker.checks import integrity
from harness.worker.training.models import MODELS

ONE_REPLICA = Cell(strategy="mirrored", replicas=1)
"""The cell the strategy under test serves (a mirrored one on one device)."""


def _mirrored() -> object:
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(["/cpu:0"])


@pytest.fixture
def keras() -> Any:
    import keras

    return keras


@pytest.mark.tf
def test_model_built_in_scope_passes(keras: Any) -> None:
    strategy = _mirrored()
    with strategy.scope():
        model = MODELS["dense"]()
        optimizer = keras.optimizers.SGD(0.01)
    assert integrity.check(strategy, ONE_REPLICA, model, optimizer, 0.5) == []


@pytest.mark.tf
def test_model_built_outside_scope_is_flagged(keras: Any) -> None:
    strategy = _mirrored()
    model = MODELS["dense"]()  # on purpose: outside strategy.scope()
    with strategy.scope():
        optimizer = keras.optimizers.SGD(0.01)
    problems = integrity.check(strategy, ONE_REPLICA, model, optimizer, 0.5)
    assert len(problems) == 1
    assert "not MirroredVariable" in problems[0] and "outside strategy.scope()" in problems[0]
    assert "model variable" in problems[0] and "ResourceVariable" in problems[0]


@pytest.mark.tf
def test_replica_count_and_loss_are_checked(keras: Any) -> None:
    strategy = _mirrored()
    with strategy.scope():
        model = MODELS["dense"]()
        optimizer = keras.optimizers.SGD(0.01)
    problems = integrity.check(
        strategy, Cell(strategy="mirrored", replicas=2), model, optimizer, float("nan")
    )
    assert any("num_replicas_in_sync is 1, expected 2" in p for p in problems)
    assert any("final loss is nan" in p for p in problems)


@pytest.mark.tf
def test_iterations_must_match_the_updates_run(keras: Any) -> None:
    strategy = _mirrored()
    with strategy.scope():
        model = MODELS["dense"]()
        optimizer = keras.optimizers.SGD(0.01)
        optimizer.build(model.trainable_variables)
    assert integrity.check(strategy, ONE_REPLICA, model, optimizer, 1.0, updates=0) == []
    problems = integrity.check(strategy, ONE_REPLICA, model, optimizer, 1.0, updates=3)
    assert problems == ["optimizer.iterations is 0 after 3 updates"]


def test_idle_parameter_server_worker_is_named() -> None:
    assert integrity.idle_workers([[10, 0], [0, 10]]) == []  # one idle window is chance
    assert integrity.idle_workers([[10, 10], [0, 0]]) == [
        ("worker 1 ran no update in the timed windows (hung or failed; the coordinator scheduled around it)")
    ]
