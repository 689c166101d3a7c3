"""FLOPs counted from the traced training step agree with the analytic count (the same convention:
convolutions and matmuls, 2 FLOPs a multiply-add, no input gradient for the first layer) for the
built-in models and a user's MLP, under float32 and mixed precision."""

from __future__ import annotations

import pytest

from harness.spec.cell import Cell
from harness.spec.models import INPUT_SHAPE, MODEL_LAYERS, flops_per_example


def parameter_count(model: str) -> int:
    return sum(layer.parameters for layer in MODEL_LAYERS[model]())


pytestmark = pytest.mark.tf


def _mlp() -> object:
    import keras

    return keras.Sequential(
        [
            keras.Input(INPUT_SHAPE),
            keras.layers.Flatten(),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


@pytest.mark.parametrize("precision", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("name", ["cnn", "dense"])
def test_the_count_of_a_built_in_model_is_its_analytic_count(name: str, precision: str) -> None:
    import keras

    from harness.worker.flops import count_step
    from harness.worker.training.models import MODELS

    keras.mixed_precision.set_dtype_policy(precision)
    try:
        found = count_step(MODELS[name], Cell(model=name, batch=32, precision=precision), INPUT_SHAPE)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")

    assert found["flops_per_example"] == pytest.approx(flops_per_example(name), rel=0.05)
    assert found["trainable_parameters"] == parameter_count(name)
    assert found["gradient_bytes"] == 4 * parameter_count(name) and found["flops_note"] == ""


def test_the_count_of_a_users_mlp_is_its_hand_count() -> None:
    from harness.worker.flops import count_step

    found = count_step(_mlp, Cell(model="dense", batch=16), INPUT_SHAPE)

    # forward + weight gradients of every layer, input gradients of all but the first
    hand = 2 * (2 * 784 * 256) + 3 * (2 * 256 * 64) + 3 * (2 * 64 * 10)
    assert found["flops_per_example"] == pytest.approx(hand, rel=0.05)
    assert found["trainable_parameters"] == 784 * 256 + 256 + 256 * 64 + 64 + 64 * 10 + 10
