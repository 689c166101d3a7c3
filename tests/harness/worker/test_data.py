"""Tests of harness.data: the MNIST file (no TensorFlow) and the tf.data pipelines (TensorFlow)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import mnist
from harness.errors import HarnessError
from harness.mnist import MNIST_URL, load_mnist, resolve_mnist_path
from harness.worker.training import data


def _fake_mnist(path, n=100, x_shape=None, y_shape=None, **extra):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=x_shape or (n, 28, 28), dtype=np.uint8)
    x.flat[0], x.flat[1] = 0, 255  # both ends of the range present
    y = rng.integers(0, 10, size=y_shape or (n,), dtype=np.uint8)
    np.savez(path, x_train=x, y_train=y, **extra)
    return x, y


@pytest.fixture
def mnist_file(tmp_path):
    path = tmp_path / "mnist.npz"
    x, y = _fake_mnist(path)
    return path, x, y


def test_load_mnist(mnist_file):
    path, x_raw, y_raw = mnist_file
    x, y = load_mnist(str(path))
    assert x.shape == (100, 28, 28, 1) and x.dtype == np.float32
    assert y.shape == (100,) and y.dtype == np.int32
    assert x.min() == 0.0 and x.max() == 1.0
    np.testing.assert_allclose(x[..., 0], x_raw / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y, y_raw)


def test_default_mnist_path_uses_keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    expected = tmp_path / "datasets" / "mnist.npz"
    assert mnist.default_mnist_path() == expected
    with pytest.raises(HarnessError) as info:
        resolve_mnist_path(None)
    assert str(expected) in str(info.value)
    expected.parent.mkdir(parents=True)
    _fake_mnist(expected)
    assert resolve_mnist_path(None) == expected
    assert resolve_mnist_path("") == expected
    assert load_mnist()[0].shape == (100, 28, 28, 1)


def test_resolve_mnist_path_missing_file_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    missing = tmp_path / "nowhere" / "mnist.npz"
    with pytest.raises(HarnessError) as info:
        resolve_mnist_path(str(missing))
    msg = str(info.value)
    assert str(missing) in msg
    assert MNIST_URL in msg
    assert "--mnist-path" in msg
    assert str(tmp_path / "keras" / "datasets" / "mnist.npz") in msg  # where Keras caches it


def test_resolve_mnist_path_rejects_a_folder(tmp_path):
    with pytest.raises(HarnessError, match="not found"):
        resolve_mnist_path(str(tmp_path))


def test_resolve_mnist_path_existing(mnist_file):
    path, _, _ = mnist_file
    assert resolve_mnist_path(str(path)) == path


@pytest.mark.parametrize(
    "kind", ["missing_x", "missing_y", "x_2d", "x_wrong_size", "length_mismatch", "not_npz"]
)
def test_load_mnist_bad_file(tmp_path, kind):
    path = tmp_path / "bad.npz"
    if kind == "missing_x":
        np.savez(path, y_train=np.zeros(10, np.uint8))
    elif kind == "missing_y":
        np.savez(path, x_train=np.zeros((10, 28, 28), np.uint8))
    elif kind == "x_2d":
        _fake_mnist(path, x_shape=(10, 784), y_shape=(10,))
    elif kind == "x_wrong_size":
        _fake_mnist(path, x_shape=(10, 32, 32), y_shape=(10,))
    elif kind == "length_mismatch":
        _fake_mnist(path, x_shape=(10, 28, 28), y_shape=(9,))
    else:
        path.write_text("this is not an npz file\n")
    with pytest.raises(HarnessError) as info:
        load_mnist(str(path))
    assert str(path) in str(info.value)


def test_load_mnist_rejects_2d_labels(tmp_path):
    path = tmp_path / "bad.npz"
    _fake_mnist(path, y_shape=(100, 1))
    with pytest.raises(HarnessError):
        load_mnist(str(path))


def test_load_mnist_npy_file_raises_data_error(tmp_path):
    path = tmp_path / "mnist.npz"
    with open(path, "wb") as f:
        np.save(f, np.zeros((10, 28, 28), np.uint8))
    with pytest.raises(HarnessError):
        load_mnist(str(path))


# --------------------------------------------------------------------------------------------------
# tf.data pipelines (import TensorFlow)
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf():  # imported here, not at module level: tests/conftest.py
    import tensorflow as tf

    return tf


def _first(ds, n=1):
    return [(x.numpy(), y.numpy()) for x, y in ds.take(n)]


@pytest.mark.tf
def test_make_dataset_mnist(tf, mnist_file):
    path, x_raw, y_raw = mnist_file
    ds = data.make_dataset("mnist", 32, seed=0, mnist_path=str(path))
    batches = _first(ds, 5)  # 100 examples = 3 full batches per epoch: this crosses an epoch
    for x, y in batches:
        assert x.shape == (32, 28, 28, 1) and x.dtype == np.float32
        assert y.shape == (32,) and y.dtype == np.int32
        assert x.min() >= 0.0 and x.max() <= 1.0
    # the examples are MNIST's: each image comes with its own label
    by_image = {x_raw[i].tobytes(): y_raw[i] for i in range(len(x_raw))}
    x0, y0 = batches[0]
    for img, label in zip(x0[..., 0], y0, strict=True):
        assert by_image[np.round(img * 255).astype(np.uint8).tobytes()] == label
    # shuffled: not simply the first 32 in file order
    assert not np.allclose(x0[..., 0], x_raw[:32] / 255.0)


@pytest.mark.tf
def test_make_dataset_mnist_missing_file(tf, tmp_path):
    with pytest.raises(HarnessError):
        data.make_dataset("mnist", 32, 0, mnist_path=str(tmp_path / "missing.npz"))


@pytest.mark.tf
def test_make_dataset_synthetic(tf):
    ds = data.make_dataset("synthetic", 16, 0)
    assert ds.element_spec[0].shape.as_list() == [16, 28, 28, 1]
    assert ds.element_spec[1].shape.as_list() == [16]
    for x, y in _first(ds, 10):  # more than the 8-batch pool: repeat() works
        assert x.shape == (16, 28, 28, 1) and x.dtype == np.float32
        assert y.shape == (16,) and y.dtype == np.int32
        assert x.min() >= 0.0 and x.max() < 1.0
        assert y.min() >= 0 and y.max() < 10


@pytest.mark.tf
def test_synthetic_pool_size(tf):
    # the pool holds at least SYNTHETIC_POOL_EXAMPLES examples, and at least 8 batches; then it repeats
    pool_batches = data.pool_batches(1024, 4 * 28 * 28)
    assert pool_batches == max(8, -(-data.SYNTHETIC_POOL_EXAMPLES // 1024))
    first = _first(data.make_dataset("synthetic", 1024, 0), pool_batches + 1)
    np.testing.assert_array_equal(first[0][0], first[pool_batches][0])
    assert not np.array_equal(first[0][0], first[1][0])


@pytest.mark.tf
def test_synthetic_same_seed_same_batches(tf):
    ((xa, ya),) = _first(data.make_dataset("synthetic", 16, 7))
    ((xb, yb),) = _first(data.make_dataset("synthetic", 16, 7))
    ((xc, _yc),) = _first(data.make_dataset("synthetic", 16, 8))
    np.testing.assert_array_equal(xa, xb)
    np.testing.assert_array_equal(ya, yb)
    assert not np.array_equal(xa, xc)


@pytest.mark.tf
@pytest.mark.parametrize(
    "model, shape, dtype, below",
    [("resnet50", (64, 64, 3), np.float32, 1.0), ("transformer", (64,), np.int32, 1000)],
)
def test_synthetic_examples_take_the_models_shape(tf, model, shape, dtype, below):  # type: ignore[no-untyped-def]
    ((x, y),) = _first(data.make_dataset("synthetic", 4, 0, model=model))
    assert x.shape == (4, *shape) and x.dtype == dtype and x.min() >= 0 and x.max() < below
    assert y.shape == (4,) and y.max() < 10
    assert (
        data.pool_batches(4, 4 * 64 * 64 * 3) * 4 * 4 * 64 * 64 * 3
        <= data.SYNTHETIC_POOL_BYTES + 4 * 4 * 64 * 64 * 3
    )


@pytest.mark.tf
@pytest.mark.parametrize(
    "loss, shape, dtype",
    [
        ("sparse_categorical_crossentropy", (4,), np.int32),
        ("binary_crossentropy", (4, 10), np.float32),
        ("mse", (4, 10), np.float32),
    ],
)
def test_synthetic_labels_match_the_loss(tf, loss, shape, dtype):  # type: ignore[no-untyped-def]
    ((_, y),) = _first(data.make_dataset("synthetic", 4, 0, model="dense", loss=loss))
    assert (
        y.shape == shape
        and y.dtype == dtype
        and y.min() >= 0
        and y.max() < (10 if dtype == np.int32 else 1.0001)
    )
    if loss == "binary_crossentropy":
        assert set(np.unique(y)) <= {0.0, 1.0}
