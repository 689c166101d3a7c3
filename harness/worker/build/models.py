"""MODELS registry: name -> Keras builder (call inside ``strategy.scope()``) and its FLOP-bearing layers
(:mod:`harness.spec.models` counts the FLOPs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.spec.models import (
    INPUT_SHAPE,
    NUM_CLASSES,
    Layer,
    cnn_layers,
    dense_layers,
    training_flops,
)


def build_cnn() -> Any:
    import keras

    return keras.Sequential(
        [
            keras.Input(INPUT_SHAPE),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(NUM_CLASSES),
        ],
        name="cnn",
    )


def build_dense() -> Any:
    import keras

    return keras.Sequential(
        [
            keras.Input(INPUT_SHAPE),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(NUM_CLASSES),
        ],
        name="dense",
    )


@dataclass(frozen=True)
class ModelSpec:
    """How to build a model (call inside ``strategy.scope()``) and its FLOP-bearing layers."""

    build: Callable[[], Any]
    layers: Callable[[], list[Layer]]

    @property
    def flops_per_example(self) -> int:
        """Training FLOPs per example (:mod:`harness.spec.models`)."""
        return training_flops(self.layers())


MODELS: dict[str, ModelSpec] = {
    "cnn": ModelSpec(build_cnn, cnn_layers),
    "dense": ModelSpec(build_dense, dense_layers),
}
