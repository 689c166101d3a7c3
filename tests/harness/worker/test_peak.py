"""The matmul peak's operand pairs, memory bound and TF32 state (pure parts)."""

from __future__ import annotations

import pytest

from harness.worker.peak import OPERANDS, PRODUCTS, pairs, tf32_active


def test_every_product_multiplies_a_distinct_pair() -> None:
    got = pairs()
    assert len(got) == PRODUCTS == len(set(got))
    assert all(i != j for i, j in got) and all(0 <= k < OPERANDS for p in got for k in p)
    with pytest.raises(ValueError):
        pairs(2, 5)


@pytest.mark.parametrize(
    "setting, override, capability, on",
    [
        (True, None, (9, 0), True),  # H100, default
        (True, "0", (9, 0), False),  # NVIDIA_TF32_OVERRIDE=0 wins over TensorFlow
        (True, "1", (8, 0), True),  # other values do not force anything
        (False, "1", (8, 0), False),  # tf.config.experimental.enable_tensor_float_32_execution(False)
        (True, None, (7, 0), False),  # V100: no TF32 tensor cores
        (True, None, None, False),  # a CPU
    ],
)
def test_tf32_needs_tensorflow_the_override_and_the_gpu(setting, override, capability, on) -> None:
    assert tf32_active(setting, override, capability) is on
