"""The device's matmul peak (for ``mfu``), measured in its own process:
``python -m harness.worker.peak --device-kind cpu|gpu --dtypes float32,bfloat16`` prints one JSON
line per dtype (:data:`harness.launch.contract.PEAK_MODULE`).

Each repeat is one call of PRODUCTS distinct n x n products (no product can be reused); a process's
figure is its best repeat. The run takes the median over its peak processes (start, between passes,
end), so one slow spell cannot set every row's MFU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from harness.analysis.metrics import matmul_flops

MATMUL_SIZE = {"CPU": 1024, "GPU": 8192}

PRODUCTS = 8
"""Distinct operand pairs per timed call, so no product can be reused (no CSE)."""

REPEATS = 5
"""Timed calls per dtype in one process (after one untimed call)."""


def matmul_rates(device: str, device_type: str, dtype: str = "float32",
                 repeats: int = REPEATS) -> list[float]:
    """FLOP/s of each of ``repeats`` calls of PRODUCTS distinct n x n matmuls on ``device``, after an
    untimed first call. ``dtype``: the compute dtype (float32, bfloat16, float16)."""
    import tensorflow as tf

    n = MATMUL_SIZE.get(device_type, 1024)
    with tf.device(device):
        a = [tf.cast(tf.random.stateless_uniform((n, n), seed=(i, 0)), dtype) for i in range(PRODUCTS)]
        b = [tf.cast(tf.random.stateless_uniform((n, n), seed=(i, 1)), dtype) for i in range(PRODUCTS)]

        @tf.function(jit_compile=False)
        def products(a: Any, b: Any) -> Any:
            return tf.add_n([tf.reduce_sum(tf.cast(tf.matmul(x, y), tf.float32)) for x, y in zip(a, b)])

        products(a, b).numpy()
        rates = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            products(a, b).numpy()
            rates.append(PRODUCTS * matmul_flops(n) / (time.perf_counter() - t0))
        return rates


def measure(device_kind: str, dtypes: list[str], repeats: int = REPEATS) -> list[dict[str, Any]]:
    """One record per dtype: the best rate of this process and every repeat, on the first device."""
    import tensorflow as tf

    device_type = "GPU" if device_kind == "gpu" else "CPU"
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    device = tf.config.list_logical_devices(device_type)[0].name
    tf32 = device_type == "GPU" and tf.config.experimental.tensor_float_32_execution_enabled()
    out = []
    for dtype in dtypes:
        rates = matmul_rates(device, device_type, dtype, repeats)
        out.append({"dtype": dtype, "flops_per_sec": max(rates), "repeats": rates, "device": device,
                    "tensor_float_32": bool(tf32) if dtype == "float32" else False})
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.worker.peak")
    p.add_argument("--device-kind", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--dtypes", default="float32")
    p.add_argument("--repeats", type=int, default=REPEATS)
    args = p.parse_args(argv)
    for record in measure(args.device_kind, args.dtypes.split(","), args.repeats):
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
