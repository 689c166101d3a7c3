"""The device's matmul peak, measured in the same run as the cells (for ``mfu``)."""

from __future__ import annotations

import time
from typing import Any

from harness.analysis.metrics import matmul_flops

MATMUL_SIZE = {"CPU": 1024, "GPU": 8192}

PRODUCTS = 8
"""Distinct operand pairs per timed call, so no product can be reused (no CSE)."""


def measure_matmul_peak(device: str, device_type: str, dtype: str = "float32",
                        seconds: float = 0.5) -> float:
    """Best FLOP/s over repeated calls of PRODUCTS distinct n x n matmuls on ``device``.

    ``dtype`` is the compute dtype of the cell's precision policy (float32, bfloat16, float16).
    """
    import tensorflow as tf

    n = MATMUL_SIZE.get(device_type, 1024)
    with tf.device(device):
        a = [tf.random.stateless_uniform((n, n), seed=(i, 0), dtype=tf.float32) for i in range(PRODUCTS)]
        b = [tf.random.stateless_uniform((n, n), seed=(i, 1), dtype=tf.float32) for i in range(PRODUCTS)]
        a = [tf.cast(t, dtype) for t in a]
        b = [tf.cast(t, dtype) for t in b]

        @tf.function(jit_compile=False)
        def products(a: Any, b: Any) -> Any:
            return tf.add_n([tf.reduce_sum(tf.cast(tf.matmul(x, y), tf.float32)) for x, y in zip(a, b)])

        products(a, b).numpy()
        best = 0.0
        deadline = time.perf_counter() + seconds
        while True:
            t0 = time.perf_counter()
            products(a, b).numpy()
            elapsed = time.perf_counter() - t0
            best = max(best, PRODUCTS * matmul_flops(n) / elapsed)
            if time.perf_counter() > deadline:
                return best
