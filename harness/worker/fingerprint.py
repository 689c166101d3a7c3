"""Hardware and software fingerprint of a worker process (imports TensorFlow; reads, never writes).

``fingerprint`` hashes only stable fields (CPU model and cores, accelerator models, count and driver,
TF/Keras/Python versions, CUDA/cuDNN/ROCm build, thread settings, TF_*/NCCL_* variables that change
behaviour), so nightly runs on the same machine and software group together.

The CPU model and the NVIDIA driver are read from ``/proc`` by hand: psutil has neither, and a
GPU host's offline bundle holds TensorFlow's own packages only."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path

from harness.contract.events import Facts
from harness.worker.peak import TF32_OVERRIDE_ENV, tf32_active

ENV_PREFIXES = (
    "TF_",
    "NCCL_",
    "OMP_",
    "KMP_",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "XLA_FLAGS",
    "NVIDIA_TF32_OVERRIDE",
)

VOLATILE_ENV = (
    "TF_CONFIG",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_CPP_MAX_VLOG_LEVEL",
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_DEBUG_FILE",
)
"""Recorded but not hashed: they differ between runs without changing performance."""


def host_cpu() -> str:
    """CPU model name from /proc/cpuinfo (Linux) or the platform module."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_driver() -> str:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return ""
    return text.splitlines()[0].strip() if text else ""


def effective_threads(setting: int, env_value: str | None, usable_cpus: int) -> int:
    """Threads TensorFlow's intra-op pool has: its tf.config setting when non-zero, else
    TF_NUM_INTRAOP_THREADS (the launcher's way to split cores between local workers), else one per
    CPU this process may run on (TensorFlow's default reads the affinity, not the host's count)."""
    if setting:
        return setting
    if env_value and env_value.strip().isdigit() and int(env_value) > 0:
        return int(env_value)
    return usable_cpus


def collect(device_type: str) -> Facts:
    """Facts about this process's devices and software; ``device_type`` is "GPU" or "CPU"."""
    import keras
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    details = [tf.config.experimental.get_device_details(g) for g in gpus]
    build = tf.sysconfig.get_build_info()
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    cpu, gpu_names = host_cpu(), [d.get("device_name", "") for d in details]
    return {
        "host_cpu": cpu,
        "host_cores": os.cpu_count() or 0,
        "gpu_names": gpu_names,
        "gpu_compute_capability": [list(d.get("compute_capability", ())) for d in details],
        "nvidia_driver": _nvidia_driver(),
        "tf_version": tf.__version__,
        "keras_version": keras.__version__,
        "python_version": platform.python_version(),
        "cuda_version": str(build.get("cuda_version", "")),
        "cudnn_version": str(build.get("cudnn_version", "")),
        "rocm_version": str(build.get("rocm_version", "")),
        "tensor_float_32": tf32_active(
            tf.config.experimental.tensor_float_32_execution_enabled(),
            env.get(TF32_OVERRIDE_ENV),
            tuple(details[0].get("compute_capability", ())) if details else None,
        ),
        "intra_op_threads": effective_threads(
            tf.config.threading.get_intra_op_parallelism_threads(),
            env.get("TF_NUM_INTRAOP_THREADS"),
            len(os.sched_getaffinity(0)),
        ),
        "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
        "env": env,
        "device_type": device_type,
        "device_name": gpu_names[0] if device_type == "GPU" and gpus else cpu,
    }


def fingerprint(facts: Facts) -> str:
    """16-hex-digit hash of the stable facts."""
    stable = {k: v for k, v in facts.items() if k != "env"}
    stable["env"] = {k: v for k, v in facts.get("env", {}).items() if k not in VOLATILE_ENV}
    blob = json.dumps(stable, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
