"""harness.diagnosis names the piece built outside strategy.scope() (in-process, one CPU device;
TensorFlow is imported inside the tests that need it: tests/conftest.py)."""

from __future__ import annotations

import pytest

from harness.worker.checks import diagnosis
from harness.worker.training.models import MODELS


def _planted(model_inside: bool, optimizer_inside: bool) -> list[str]:
    import keras
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    built = {}
    for name, inside, make in (
        ("model", model_inside, MODELS["dense"]),
        ("optimizer", optimizer_inside, lambda: keras.optimizers.Adam(1e-3)),
    ):
        if inside:
            with strategy.scope():
                built[name] = make()
        else:
            built[name] = make()
    return diagnosis.diagnose(strategy, "mirrored", built["model"], built["optimizer"], 1)


@pytest.mark.tf
def test_nothing_to_say_when_both_are_built_in_scope() -> None:
    assert _planted(True, True) == []


@pytest.mark.tf
def test_model_outside_the_scope_is_named() -> None:
    (problem,) = _planted(False, True)
    assert problem.startswith("the model was built outside strategy.scope()")
    assert "ResourceVariable" in problem and "trains on one device" in problem


@pytest.mark.tf
def test_optimizer_outside_the_scope_is_named() -> None:
    (problem,) = _planted(True, False)
    assert problem.startswith("the optimizer was built outside strategy.scope()")
    assert "iteration" in problem  # caught by the counter made at construction, before training


@pytest.mark.tf
def test_both_outside_the_scope_are_named_together() -> None:
    (problem,) = _planted(False, False)
    assert problem.startswith("both the model and the optimizer were built outside")


@pytest.mark.tf
def test_single_device_strategies_have_no_scope_to_check() -> None:
    import keras
    import tensorflow as tf

    strategy = tf.distribute.get_strategy()
    model = MODELS["dense"]()
    assert diagnosis.diagnose(strategy, "default", model, keras.optimizers.SGD(), 1) == []


@pytest.mark.tf
def test_every_replica_device_did_work_on_one_device() -> None:
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    assert diagnosis.idle_replica_problems(strategy, ["/job:localhost/replica:0/task:0/device:CPU:0"]) == []
    problems = diagnosis.idle_replica_problems(strategy, ["/device:CPU:0", "/device:CPU:1"])
    assert problems and "CPU:1 did no work" in problems[0]


def test_a_gpu_holding_only_its_variables_did_no_work() -> None:
    # mirrored variables alone give every replica GPU a non-zero peak: 400 kB here
    peaks = {"GPU:0": 2_500_000, "GPU:1": 400_000, "GPU:2": None}
    problems = diagnosis.idle_gpus(peaks, resident_bytes=400_000, gradient_bytes=400_000)
    assert problems == [
        (
            "GPU:1 did no work: its peak memory 400000 B is no more than its variables' "
            "400000 B (a training step adds gradients of 400000 B and activations)"
        )
    ]
    assert diagnosis.idle_gpus({"GPU:0": 600_001}, 400_000, 400_000) == []
