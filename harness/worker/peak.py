"""The device's matmul peak (for ``mfu``), measured in its own process:
``python -m harness.worker.peak --device-kind cpu|gpu --dtypes float32,bfloat16`` prints one JSON
line per dtype (:data:`harness.contract.job.PEAK_MODULE`). It holds at most the operands and
every product at once, (OPERANDS + PRODUCTS) x n x n elements: 3 GiB in float32 at n = 8192. How
the run takes its median: docs/explanation/mfu.md, "The peak"."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from harness.formulas.metrics import matmul_flops

MATMUL_SIZE = {"CPU": 1024, "GPU": 8192}

OPERANDS = 4
"""Distinct n x n operands made per dtype; PRODUCTS ordered pairs of them are multiplied."""

PRODUCTS = 8
"""Distinct operand pairs per timed call, so no product can be reused (no CSE)."""

REPEATS = 5
"""Timed calls per dtype in one process (after one untimed call)."""

TF32_OVERRIDE_ENV = "NVIDIA_TF32_OVERRIDE"
"""Set to 0, it turns TF32 off in cuBLAS/cuDNN whatever TensorFlow's setting; other values do not
turn it on."""


def pairs(operands: int = OPERANDS, products: int = PRODUCTS) -> list[tuple[int, int]]:
    """``products`` distinct ordered pairs (i, j) of operand indices, i != j first."""
    every = [(i, j) for i in range(operands) for j in range(operands)]
    every.sort(key=lambda p: p[0] == p[1])
    if products > len(every):
        raise ValueError(f"{products} products need more than {operands} operands")
    return every[:products]


def tf32_active(tf_setting: bool, override: str | None, compute_capability: tuple[int, int] | None) -> bool:
    """Whether float32 matmuls use TF32 tensor cores: TensorFlow allows it, NVIDIA_TF32_OVERRIDE is
    not 0, and the GPU has them (compute capability 8.0 or more; None: not a GPU)."""
    if compute_capability is None or tuple(compute_capability) < (8, 0):
        return False
    return bool(tf_setting) and override != "0"


def matmul_rates(
    device: str, device_type: str, dtype: str = "float32", repeats: int = REPEATS
) -> list[float]:
    """FLOP/s of each of ``repeats`` calls of PRODUCTS distinct n x n matmuls on ``device``, after an
    untimed first call. ``dtype``: the compute dtype (float32, bfloat16, float16). Each product
    is kept alive by one of its elements only (no memory-bound reduction of the n x n result in the
    timed call); operands are made in ``dtype`` directly (no float32 copies)."""
    import tensorflow as tf

    n = MATMUL_SIZE.get(device_type, 1024)
    with tf.device(device):
        ops = [tf.random.stateless_uniform((n, n), seed=(i, 0), dtype=dtype) for i in range(OPERANDS)]

        @tf.function(jit_compile=False)
        def products(ops: Any) -> Any:
            return tf.add_n([tf.cast(tf.matmul(ops[i], ops[j])[0, 0], tf.float32) for i, j in pairs()])

        products(ops).numpy()
        rates = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            products(ops).numpy()
            rates.append(PRODUCTS * matmul_flops(n) / (time.perf_counter() - t0))
        return rates


def measure(device_kind: str, dtypes: list[str], repeats: int = REPEATS) -> list[dict[str, Any]]:
    """One record per dtype: the best rate of this process and every repeat, on the first device,
    with the TF32 state and NVIDIA_TF32_OVERRIDE."""
    import tensorflow as tf

    device_type = device_kind.upper()
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    device = tf.config.list_logical_devices(device_type)[0].name
    capability = None
    if device_type == "GPU" and gpus:
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
    override = os.environ.get(TF32_OVERRIDE_ENV)
    tf32 = tf32_active(tf.config.experimental.tensor_float_32_execution_enabled(), override, capability)
    out = []
    for dtype in dtypes:
        rates = matmul_rates(device, device_type, dtype, repeats)
        out.append(
            {
                "dtype": dtype,
                "flops_per_sec": max(rates),
                "repeats": rates,
                "device": device,
                "tensor_float_32": tf32 if dtype == "float32" else False,
                "tf32_override": override,
            }
        )
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
