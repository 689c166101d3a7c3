"""A cluster task that sees too few GPUs fails loudly instead of computing on the CPU; verify's
workers turn on op determinism and turn off TF32 (on a fake ``tf.config``, and on TensorFlow's)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness.worker.devices import (
    configure_numerics,
    gpu_shortfall,
    op_determinism_enabled,
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


def _fake_gpu_tf(gpus: int, calls: list[tuple[str, Any]]) -> SimpleNamespace:
    """A ``tensorflow`` with ``gpus`` physical GPUs whose device set-up records each call; its
    logical devices follow the logical configurations set, as TensorFlow's do."""
    physical = [f"PhysicalDevice(GPU:{i})" for i in range(gpus)]
    state: dict[str, Any] = {"visible": physical, "split": {}}

    def logical(kind: str) -> list[SimpleNamespace]:
        n = sum(len(state["split"].get(g, [None])) for g in state["visible"])
        return [SimpleNamespace(name=f"/device:{kind}:{i}") for i in range(n)]

    def split(gpu: str, configs: list[Any]) -> None:
        state["split"][gpu] = configs
        calls.append(("split", (gpu, len(configs), configs[0].memory_limit)))

    config = SimpleNamespace(
        list_physical_devices=lambda kind: physical if kind == "GPU" else ["CPU"],
        set_visible_devices=lambda devices, kind: state.update(visible=devices),
        get_visible_devices=lambda kind: state["visible"],
        set_logical_device_configuration=split,
        get_logical_device_configuration=lambda gpu: state["split"].get(gpu),
        LogicalDeviceConfiguration=lambda memory_limit=None: SimpleNamespace(memory_limit=memory_limit),
        list_logical_devices=logical,
        experimental=SimpleNamespace(
            set_memory_growth=lambda gpu, on: calls.append(("growth", gpu)),
            get_memory_info=lambda name: {
                "current": 0,
                "peak": {"GPU:0": 3 * 2**20, "GPU:1": 5 * 2**20}[name],
            },
        ),
    )
    return SimpleNamespace(config=config)


def test_replicas_above_the_gpu_count_run_on_logical_gpus_with_a_share_of_the_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.spec.protocol import Platform
    from harness.worker.devices import configure_devices
    from harness.worker.measure import _gpu_memory

    calls: list[tuple[str, Any]] = []
    monkeypatch.setitem(sys.modules, "tensorflow", _fake_gpu_tf(1, calls))
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    one = Platform("gpu", 1, gpu_memory_mib=80_000)
    kind, devices = configure_devices(one, 2)
    assert (kind, devices) == ("GPU", ["/device:GPU:0", "/device:GPU:1"])
    assert calls == [("split", ("PhysicalDevice(GPU:0)", 2, 36_000))]  # no memory growth beside a limit
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"  # the limit a cap, growing to it
    assert _gpu_memory(devices) == {
        "physical_gpus": 1,
        "gpu_memory_peak_mib": 5.0,
        "gpu_memory_limit_mib": 36_000.0,
    }

    calls.clear()
    monkeypatch.setitem(sys.modules, "tensorflow", _fake_gpu_tf(2, calls))
    kind, devices = configure_devices(Platform("gpu", 2, gpu_memory_mib=80_000), 2)  # a GPU each
    assert devices == ["/device:GPU:0", "/device:GPU:1"]
    assert calls == [("growth", "PhysicalDevice(GPU:0)"), ("growth", "PhysicalDevice(GPU:1)")]
    assert _gpu_memory(devices)["gpu_memory_limit_mib"] is None
