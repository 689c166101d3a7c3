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
from harness.spec.models import MODELS as INFO


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


def build_resnet50() -> Any:
    import keras

    info = INFO["resnet50"]
    return keras.applications.ResNet50(
        weights=None, input_shape=info.input_shape, classes=info.classes, classifier_activation=None
    )


def build_mobilenetv2() -> Any:
    import keras

    info = INFO["mobilenetv2"]
    return keras.applications.MobileNetV2(
        weights=None, input_shape=info.input_shape, classes=info.classes, classifier_activation=None
    )


TRANSFORMER_WIDTH = 128
TRANSFORMER_HEADS = 4
TRANSFORMER_FEED_FORWARD = 256
TRANSFORMER_BLOCKS = 2
TRANSFORMER_DROPOUT = 0.1


def build_transformer() -> Any:
    """A post-norm Transformer encoder (:data:`harness.spec.models.MODELS` says its sizes): token
    and learned position embeddings, blocks of multi-head self-attention and a feed-forward layer,
    each with dropout, a residual connection and LayerNorm; mean-pooled to the classes."""
    import keras

    info = INFO["transformer"]

    class AddPositions(keras.layers.Layer):
        """A learned embedding of each position, added to the tokens' (a weight of the model:
        an Embedding called on a constant would be folded into the graph untrained)."""

        def build(self, shape: Any) -> None:
            self.table = self.add_weight(
                shape=tuple(shape[1:]), initializer="random_normal", name="positions"
            )

        def call(self, x: Any) -> Any:
            return x + self.table

    ids = keras.Input(info.input_shape, dtype="int32")
    x = AddPositions()(keras.layers.Embedding(info.vocab, TRANSFORMER_WIDTH)(ids))
    for _ in range(TRANSFORMER_BLOCKS):
        attended = keras.layers.MultiHeadAttention(
            TRANSFORMER_HEADS, TRANSFORMER_WIDTH // TRANSFORMER_HEADS, dropout=TRANSFORMER_DROPOUT
        )(x, x)
        x = keras.layers.LayerNormalization()(x + keras.layers.Dropout(TRANSFORMER_DROPOUT)(attended))
        hidden = keras.layers.Dense(TRANSFORMER_FEED_FORWARD, activation="relu")(x)
        out = keras.layers.Dense(TRANSFORMER_WIDTH)(hidden)
        x = keras.layers.LayerNormalization()(x + keras.layers.Dropout(TRANSFORMER_DROPOUT)(out))
    pooled = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(ids, keras.layers.Dense(info.classes)(pooled), name="transformer")


@dataclass(frozen=True)
class ModelSpec:
    """How to build a model (call inside ``strategy.scope()``), and its FLOP-bearing layers where an
    analytic count is kept."""

    build: Callable[[], Any]
    layers: Callable[[], list[Layer]] | None = None

    @property
    def flops_per_example(self) -> int | None:
        """Analytic training FLOPs per example (:mod:`harness.spec.models`), None without one."""
        return None if self.layers is None else training_flops(self.layers())


MODELS: dict[str, ModelSpec] = {
    "cnn": ModelSpec(build_cnn, cnn_layers),
    "dense": ModelSpec(build_dense, dense_layers),
    "resnet50": ModelSpec(build_resnet50),
    "mobilenetv2": ModelSpec(build_mobilenetv2),
    "transformer": ModelSpec(build_transformer),
}
"""Built-in model name -> its builder (:data:`harness.spec.models.MODELS` describes each)."""
