"""A user's model built in the worker: its function called with the batch when it takes one, its
source checked against the planned digest, anything but a Keras model refused by name, and the
input pipeline's shape read from the built model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.spec.models import ModelRef

pytestmark = pytest.mark.tf

SOURCE = """
import keras


def seq(batch):
    ids = keras.Input((12,), dtype="int32", batch_size=batch)
    x = keras.layers.Embedding(77, 8)(ids)
    return keras.Model(ids, keras.layers.Dense(5)(keras.layers.GlobalAveragePooling1D()(x)))


def number():
    return 3
"""


def _ref(tmp_path: Path, function: str) -> ModelRef:
    path = tmp_path / "user.py"
    path.write_text(SOURCE)
    return ModelRef(str(path), function, hashlib.sha256(path.read_bytes()).hexdigest()[:12])


def test_a_users_sequence_model_is_built_with_its_batch_and_fed_token_ids(tmp_path: Path) -> None:
    from harness.worker.training.data import make_dataset
    from harness.worker.training.models import info_of, user_builder

    ref = _ref(tmp_path, "seq")
    model = user_builder(ref, 4)()
    info = info_of(ref, model)  # a cell holds its model as a ModelRef

    assert model.inputs[0].shape[0] == 4
    assert (info.input_shape, info.input_kind, info.vocab, info.classes) == ((12,), "ids", 77, 5)
    x, y = next(iter(make_dataset("synthetic", 4, 0, model=info)))
    assert x.shape == (4, 12) and x.dtype.name == "int32" and int(x.numpy().max()) < 77
    assert int(y.numpy().max()) < 5


def test_anything_but_a_keras_model_is_refused_by_name(tmp_path: Path) -> None:
    from harness.worker.training.models import user_builder

    with pytest.raises(TypeError, match=r"user.py:number returned int, expected a keras.Model"):
        user_builder(_ref(tmp_path, "number"), 4)()


def test_a_file_changed_after_planning_is_refused(tmp_path: Path) -> None:
    from harness.worker.training.models import user_builder

    ref = _ref(tmp_path, "seq")
    Path(ref.source).write_text(SOURCE + "\n# edited\n")
    with pytest.raises(RuntimeError, match="changed after the run was planned"):
        user_builder(ModelRef(ref.source, ref.function, ref.digest), 4)()
