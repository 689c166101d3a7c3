"""The models' FLOP-bearing layers and analytic training FLOPs, by name (pure; the Keras builders are
in :mod:`harness.worker.training.models`). The convention (multiply-adds of convolutions and
matmuls, 2 FLOPs each; forward, weight gradients, and input gradients for every layer but the
first) is :mod:`harness.formulas.flops`'s."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

INPUT_SHAPE = (28, 28, 1)

NUM_CLASSES = 10

MNIST_TRAIN = 60_000
"""Examples in MNIST's training set: one epoch of the MNIST models."""


@dataclass(frozen=True)
class Layer:
    """A FLOP-bearing layer: forward FLOPs per example and trainable parameters (kernel + bias)."""

    name: str
    forward_flops: int
    parameters: int = 0


def conv2d(name: str, h: int, w: int, c_in: int, c_out: int, k: int) -> tuple[Layer, int, int]:
    """A 'valid' stride-1 k x k convolution (FLOPs per example; kernel k x k x c_in x c_out and bias
    c_out), and its output height and width."""
    h_out, w_out = h - k + 1, w - k + 1
    flops = 2 * k * k * c_in * c_out * h_out * w_out
    return Layer(name, flops, k * k * c_in * c_out + c_out), h_out, w_out


def dense(name: str, n_in: int, n_out: int) -> Layer:
    """A dense layer: FLOPs per example of a matmul of one example; kernel n_in x n_out and bias n_out."""
    return Layer(name, 2 * n_in * n_out, n_in * n_out + n_out)


def cnn_layers() -> list[Layer]:
    """Conv32(3x3)-Pool(2)-Conv64(3x3)-Pool(2)-Flatten-Dense10 on 28x28x1."""
    conv32, h, w = conv2d("conv32", 28, 28, 1, 32, 3)
    conv64, h, w = conv2d("conv64", h // 2, w // 2, 32, 64, 3)
    return [conv32, conv64, dense("dense10", (h // 2) * (w // 2) * 64, 10)]


def dense_layers() -> list[Layer]:
    """Flatten-Dense128-Dense10 on 784 inputs."""
    return [dense("dense128", 784, 128), dense("dense10", 128, 10)]


def training_flops(layers: list[Layer]) -> int:
    """Forward + weight-gradient + input-gradient FLOPs per example (no input gradient for layer 0)."""
    return sum((2 if i == 0 else 3) * layer.forward_flops for i, layer in enumerate(layers))


@dataclass(frozen=True)
class ModelInfo:
    """A built-in model, as the parent plans it (its Keras builder is in
    :mod:`harness.worker.training.models`): its examples' shape and kind (``image``: float32 pixels;
    ``ids``: int32 token ids below ``vocab``), its classes, and its FLOP-bearing layers where an
    analytic count is kept (None: the worker's count from the traced step is the only one)."""

    name: str
    description: str
    input_shape: tuple[int, ...]
    title: str = ""
    """The model in words, as a sentence names it ("the MNIST CNN")."""
    classes: int = NUM_CLASSES
    input_kind: str = "image"
    vocab: int = 0
    layers: Callable[[], list[Layer]] | None = None
    epoch_examples: int = 0
    """Examples in one epoch of the model's data set (MNIST's training set: 60,000); 0 where the
    model trains on synthetic data of no fixed size."""
    split_sensitive: str = ""
    """Why training depends on how an update's batch is split over replicas and micro-batches
    (BatchNorm's per-replica statistics, dropout's per-replica masks), "" when it does not: only
    cells of one split must then compute the same (``verify``)."""

    @property
    def mnist_shaped(self) -> bool:
        """Whether the real MNIST file (28x28x1 images, 10 classes) can feed it."""
        return self.input_kind == "image" and self.input_shape == INPUT_SHAPE and self.classes == NUM_CLASSES


BATCH_NORM = "BatchNorm normalizes each replica's (and micro-batch's) own examples"

IMAGE_64 = (64, 64, 3)
"""The real architectures' input size here: small enough for a CPU, large enough for their strides."""

MODELS: dict[str, ModelInfo] = {
    m.name: m
    for m in (
        ModelInfo(
            "cnn",
            "Conv32-Pool-Conv64-Pool-Flatten-Dense10 on 28x28x1",
            INPUT_SHAPE,
            "the MNIST CNN",
            layers=cnn_layers,
            epoch_examples=MNIST_TRAIN,
        ),
        ModelInfo(
            "dense",
            "Flatten-Dense128-Dense10 on 28x28x1",
            INPUT_SHAPE,
            "the dense model",
            layers=dense_layers,
            epoch_examples=MNIST_TRAIN,
        ),
        ModelInfo(
            "resnet50",
            "keras.applications.ResNet50 (weights=None, BatchNorm) on 64x64x3, 10 classes",
            IMAGE_64,
            "ResNet-50",
            split_sensitive=BATCH_NORM,
        ),
        ModelInfo(
            "mobilenetv2",
            "keras.applications.MobileNetV2 (weights=None, BatchNorm, depthwise) on 64x64x3, 10 classes",
            IMAGE_64,
            "MobileNetV2",
            split_sensitive=BATCH_NORM,
        ),
        ModelInfo(
            "transformer",
            "a Transformer encoder: 2 blocks, 4 heads, width 128, feed-forward 256, dropout 0.1, on 64 "
            "token ids of a 1000-word vocabulary, mean-pooled to 10 classes",
            (64,),
            "the Transformer encoder",
            input_kind="ids",
            vocab=1000,
            split_sensitive="dropout draws its masks per replica and micro-batch",
        ),
    )
}
"""Built-in model name -> its description."""

MODEL_LAYERS: dict[str, Callable[[], list[Layer]]] = {
    name: m.layers for name, m in MODELS.items() if m.layers is not None
}
"""Model name -> its FLOP-bearing layers, in order (the models with an analytic count)."""

MODEL_NAMES = tuple(MODELS)

MODEL_TITLES = {name: m.title for name, m in MODELS.items()}
"""Built-in model name -> the model in words."""


def flops_per_example(model: str) -> int | None:
    """Analytic training FLOPs per example of ``model`` (see the module docstring), None for a
    model without an analytic count."""
    layers = MODEL_LAYERS.get(model)
    return None if layers is None else training_flops(layers())


REF = re.compile(r"^(?P<source>[^@]+):(?P<function>[A-Za-z_][A-Za-z0-9_]*)@(?P<digest>[0-9a-f]{12})$")
"""A user's model as a cell holds it: ``<file.py or package.module>:<function>@<source digest>``
(``--model FILE.py:function`` resolved by :func:`harness.commands.selection.resolve_model`)."""


class ModelRef(str):
    """A user's model: the file (absolute path) or module that defines it, the function that
    returns the Keras model, and the first 12 hex digits of the source's SHA-256 (a changed file
    is another series). It is also its text, ``<source>:<function>@<digest>``, so a cell, a job
    file or a parquet column holds it as the string it is; a :class:`harness.spec.cell.Cell`
    built from that string holds a ModelRef again (:func:`as_model`)."""

    source: str
    function: str
    digest: str

    def __new__(cls, source: str, function: str, digest: str) -> ModelRef:
        ref = super().__new__(cls, f"{source}:{function}@{digest}")
        ref.__dict__.update(source=source, function=function, digest=digest)
        return ref

    def __reduce__(self) -> tuple[type[ModelRef], tuple[str, str, str]]:
        return ModelRef, (self.source, self.function, self.digest)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a ModelRef is immutable: cannot set {name}")

    @property
    def is_file(self) -> bool:
        return self.source.endswith(".py")

    @property
    def label(self) -> str:
        """Short, readable and path-safe: ``<file stem or module>.<function>@<digest[:8]>``."""
        stem = self.source.rsplit("/", 1)[-1].removesuffix(".py") if self.is_file else self.source
        return f"{stem}.{self.function}@{self.digest[:8]}"


def parse_ref(model: str) -> ModelRef | None:
    """The user model ``model`` names (its text, :data:`REF`), or None for a built-in name (or
    anything else). The one place a model's text is parsed."""
    if isinstance(model, ModelRef):
        return model
    found = REF.match(model)
    return None if found is None else ModelRef(found["source"], found["function"], found["digest"])


def as_model(model: str) -> str:
    """A cell's model: a ModelRef for a user's model's text, else the built-in name unchanged."""
    return parse_ref(model) or model


def model_label(model: str) -> str:
    """What a cell id shows for ``model``: the built-in name, or a user model's label."""
    return model.label if isinstance(model, ModelRef) else model


LOSS_NAMES = ("auto", "sparse_categorical_crossentropy", "binary_crossentropy", "mse")
"""Training losses (``--loss``): ``auto`` chooses from the model's output (:func:`chosen_loss`);
the cross-entropies take the outputs as logits."""


def chosen_loss(loss: str, classes: int) -> str:
    """The loss a cell trains with: ``loss``, or for ``auto`` binary cross-entropy on one output
    unit and sparse categorical cross-entropy on more."""
    if loss != "auto":
        return loss
    return "binary_crossentropy" if classes == 1 else "sparse_categorical_crossentropy"
