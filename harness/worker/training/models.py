"""MODELS registry: name -> Keras builder (call inside ``strategy.scope()``); a user's model's builder
(:mod:`harness.spec.models` describes the built-in ones and counts their FLOPs)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.spec.models import INPUT_SHAPE, NUM_CLASSES, ModelInfo, ModelRef
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


def keras_application(name: str, constructor: str) -> Callable[[], Any]:
    """A builder of ``keras.applications.<constructor>``, untrained, shaped by model ``name``'s info."""

    def build() -> Any:
        import keras

        info = INFO[name]
        return getattr(keras.applications, constructor)(
            weights=None, input_shape=info.input_shape, classes=info.classes, classifier_activation=None
        )

    return build


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


MODELS: dict[str, Callable[[], Any]] = {
    "cnn": build_cnn,
    "dense": build_dense,
    "resnet50": keras_application("resnet50", "ResNet50"),
    "mobilenetv2": keras_application("mobilenetv2", "MobileNetV2"),
    "transformer": build_transformer,
}
"""Built-in model name -> its builder; :data:`harness.spec.models.MODELS` is the one registry of
names, descriptions and FLOP-bearing layers."""


def _user_function(ref: ModelRef) -> Callable[..., Any]:
    """The function a user's model reference names, its source checked against the digest the run
    was planned with."""
    if ref.is_file:
        path = Path(ref.source)
        name = f"harness_user_model_{ref.digest}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path} as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(ref.source)
        path = Path(str(module.__file__))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    if digest != ref.digest:
        raise RuntimeError(
            f"{path} changed after the run was planned (digest {digest}, planned {ref.digest})"
        )
    function = getattr(module, ref.function, None)
    if not callable(function):
        raise TypeError(f"{ref.source}:{ref.function} is not a function (it is {type(function).__name__})")
    return function


def _takes_batch(function: Callable[..., Any]) -> bool:
    """Whether the user's function takes an argument (it is then given the per-replica batch)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def user_builder(ref: ModelRef, batch: int) -> Callable[[], Any]:
    """A builder of a user's model: its function called (with ``batch``, the per-replica batch, when
    it takes an argument); a TypeError naming what it returned when that is not a Keras model."""

    def build() -> Any:
        import keras

        function = _user_function(ref)
        model = function(batch) if _takes_batch(function) else function()
        if not isinstance(model, keras.Model):
            raise TypeError(
                f"{ref.source}:{ref.function} returned {type(model).__name__}, expected a keras.Model"
            )
        return model

    return build


def builder_of(model: str, batch: int) -> Callable[[], Any]:
    """The builder of a cell's model (:attr:`harness.spec.cell.Cell.model`): a built-in one, or a
    user's (:func:`user_builder`)."""
    return user_builder(model, batch) if isinstance(model, ModelRef) else MODELS[model]


def info_of(model: str, built: Any) -> ModelInfo:
    """What the input pipeline needs of a cell's model: a built-in one's description, or one read
    from a user's built model: its first input's shape (integer inputs are token ids, below the
    first Embedding's vocabulary), and its output's last dimension as the classes."""
    if not isinstance(model, ModelRef):
        return INFO[model]
    example = built.inputs[0]
    shape = tuple(int(d) for d in example.shape[1:])
    classes = int(built.outputs[0].shape[-1])
    if "int" not in str(example.dtype):
        return ModelInfo(model, "a user's model", shape, classes=classes)
    vocab = next(
        (int(layer.input_dim) for layer in built._flatten_layers() if hasattr(layer, "input_dim")), 2
    )
    return ModelInfo(model, "a user's model", shape, classes=classes, input_kind="ids", vocab=vocab)
