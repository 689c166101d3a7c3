"""A cluster task that sees too few GPUs fails loudly instead of computing on the CPU; verify's
workers turn on op determinism and turn off TF32 (on a fake ``tf.config``, and on TensorFlow's)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness.worker.devices import (
    configure_numerics,
    gpu_shortfall,
    op_determinism_enabled,
    set_deterministic_numerics,
)


def test_a_task_with_enough_gpus_is_fine() -> None:
    assert gpu_shortfall(2, 2, "2,3", "worker 1") is None
    assert gpu_shortfall(1, 0, None, "ps 0") is None


def test_a_task_with_too_few_gpus_is_named_with_its_mask() -> None:
    why = gpu_shortfall(0, 1, "4", "worker 2")
    assert why == (
        "worker 2 sees 0 GPU(s) (CUDA_VISIBLE_DEVICES='4') and needs 1: its work would run on the CPU"
    )


def _fake_tf(calls: list[tuple[str, Any]]) -> SimpleNamespace:
    """A module standing in for ``tensorflow``: its two ``tf.config.experimental`` setters record
    their calls."""
    experimental = SimpleNamespace(
        enable_op_determinism=lambda: calls.append(("enable_op_determinism", None)),
        enable_tensor_float_32_execution=lambda on: calls.append(("enable_tensor_float_32_execution", on)),
    )
    return SimpleNamespace(config=SimpleNamespace(experimental=experimental))


def test_deterministic_numerics_turn_on_op_determinism_and_turn_off_tf32() -> None:
    calls: list[tuple[str, Any]] = []
    set_deterministic_numerics(_fake_tf(calls).config)
    assert calls == [("enable_op_determinism", None), ("enable_tensor_float_32_execution", False)]


def test_configure_numerics_calls_tensorflow_only_for_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    monkeypatch.setitem(sys.modules, "tensorflow", _fake_tf(calls))
    configure_numerics(False)  # a measured run: TensorFlow's defaults, untouched
    assert calls == []
    configure_numerics(True)
    assert calls == [("enable_op_determinism", None), ("enable_tensor_float_32_execution", False)]


@pytest.fixture
def restored_numerics() -> Iterator[Any]:
    """TensorFlow, with op determinism and TF32 put back as they were after the test (they are
    process-wide: the tests after it must not train deterministically)."""
    import tensorflow as tf
    from tensorflow.python.framework import config

    determinism, tf32 = (
        config.is_op_determinism_enabled(),
        tf.config.experimental.tensor_float_32_execution_enabled(),
    )
    try:
        yield tf
    finally:
        (config.enable_op_determinism if determinism else config.disable_op_determinism)()
        tf.config.experimental.enable_tensor_float_32_execution(tf32)


@pytest.mark.tf
def test_configure_numerics_sets_tensorflow_s_flags(restored_numerics: Any) -> None:
    tf = restored_numerics
    configure_numerics(True)
    assert op_determinism_enabled() is True
    assert tf.config.experimental.tensor_float_32_execution_enabled() is False
