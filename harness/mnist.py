"""The real MNIST file (``mnist.npz``): where it is and reading it with numpy. No TensorFlow: the parent
checks the file before any work, the worker builds its input pipeline from the same arrays."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from harness.errors import HarnessError

MNIST_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"


def default_mnist_path() -> Path:
    """Where ``keras.datasets.mnist.load_data()`` caches the file (``$KERAS_HOME`` or ~/.keras)."""
    keras_home = Path(os.environ.get("KERAS_HOME", Path.home() / ".keras"))
    return keras_home / "datasets" / "mnist.npz"


def resolve_mnist_path(path: str | None) -> Path:
    """The MNIST file to read, or HarnessError saying where to put it. Cheap: no TensorFlow."""
    p = Path(path).expanduser() if path else default_mnist_path()
    if not p.is_file():
        raise HarnessError(
            f"MNIST file not found at {p}; expected an .npz with arrays x_train (N, 28, 28) uint8 "
            f"and y_train (N,) integers there or at --mnist-path FILE. This machine may be offline: "
            f"download {MNIST_URL} and save it as {default_mnist_path()} (where Keras caches it)."
        )
    return p


def load_mnist(path: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Training split of MNIST in Keras's ``mnist.npz`` format, scaled to [0, 1), shape (N, 28, 28, 1)."""
    p = resolve_mnist_path(path)
    try:
        with np.load(p, allow_pickle=False) as f:
            x, y = f["x_train"], f["y_train"]
    except (OSError, KeyError, ValueError, TypeError, AttributeError, zipfile.BadZipFile) as e:
        raise HarnessError(f"{p} is not a Keras mnist.npz (needs x_train and y_train): {e}") from e
    if x.shape[1:] != (28, 28) or x.dtype != np.uint8 or y.ndim != 1 or len(x) != len(y):
        raise HarnessError(
            f"{p}: x_train is {x.dtype} {x.shape} and y_train {y.dtype} {y.shape}; "
            "expected uint8 (N, 28, 28) and integers (N,)"
        )
    return (x.astype(np.float32) / 255.0)[..., None], y.astype(np.int32)
