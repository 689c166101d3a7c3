"""Device set-up at worker start: the cell's GPUs, or N logical CPU devices; and verify's
numerics (op determinism on, TensorFloat-32 off)."""

from __future__ import annotations

import os

from harness.spec.protocol import Platform


def short_name(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:CPU:1`` -> ``CPU:1`` (upper case, to compare)."""
    tail = device.split("device:")[-1] if "device:" in device else device.rsplit("/", 1)[-1]
    return tail.upper()


def gpu_shortfall(seen: int, needed: int, mask: str | None, who: str) -> str | None:
    """Why a task that must compute on ``needed`` GPUs cannot (it sees ``seen``; ``mask``: its
    CUDA_VISIBLE_DEVICES), or None. Without this TensorFlow would silently place its work on the
    CPU."""
    if seen >= needed:
        return None
    return (
        f"{who} sees {seen} GPU(s) (CUDA_VISIBLE_DEVICES={mask!r}) and needs {needed}: its work "
        "would run on the CPU"
    )


def prepare_task_gpus(platform: Platform, needed: int, who: str) -> None:
    """A multi-worker or parameter-server task, before its strategy or server starts TensorFlow's
    runtime: memory growth on every visible GPU (so tasks and co-tenants sharing a GPU do not each
    take all its memory), and a RuntimeError when a computing task sees fewer GPUs than it needs."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    for g in gpus:
        tf.config.experimental.set_memory_growth(g, True)
    if platform.device_kind == "gpu" and needed:
        why = gpu_shortfall(len(gpus), needed, os.environ.get("CUDA_VISIBLE_DEVICES"), who)
        if why:
            raise RuntimeError(why)


LOGICAL_GROWTH = ("TF_FORCE_GPU_ALLOW_GROWTH", "true")
"""Set before the first GPU allocation of a worker on logical GPUs: TensorFlow's allocator then
grows each logical GPU's memory up to its limit instead of taking the whole limit at its first
allocation, so a group's live processes sharing one GPU hold only what they use (as with memory
growth on a whole GPU). A value the user set is kept."""


def configure_devices(platform: Platform, replicas: int) -> tuple[str, list[str]]:
    """Make ``replicas`` devices visible (GPUs, split into logical ones where there are fewer
    (:meth:`Platform.logical_gpus`), or logical CPUs); returns (device type, names)."""
    import tensorflow as tf

    if platform.device_kind == "gpu":
        split = platform.logical_gpus(replicas)
        per_gpu = split.per_gpu if split else 1
        gpus = tf.config.list_physical_devices("GPU")[: -(-replicas // per_gpu)]
        tf.config.set_visible_devices(gpus, "GPU")
        if split:  # the limit a cap, not an allocation at start-up: see LOGICAL_GROWTH
            os.environ.setdefault(*LOGICAL_GROWTH)
        for g in gpus:
            if split:  # a memory limit each (the Python API takes a limit or growth, not both)
                limit = tf.config.LogicalDeviceConfiguration(memory_limit=split.memory_mib)
                tf.config.set_logical_device_configuration(g, [limit] * split.per_gpu)
            else:
                tf.config.experimental.set_memory_growth(g, True)
        kind = "GPU"
    else:
        tf.config.set_visible_devices([], "GPU")
        cpus = tf.config.list_physical_devices("CPU")
        if replicas > 1:
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas
            )
        kind = "CPU"
    devices = [d.name for d in tf.config.list_logical_devices(kind)][:replicas]
    if len(devices) < replicas:
        hint = " (a CPU-only TensorFlow build? install the CUDA build, or run with --device cpu)"
        raise RuntimeError(
            f"TensorFlow sees {len(devices)} {kind} device(s), the cell needs {replicas}"
            + (hint if kind == "GPU" else "")
        )
    return kind, devices


def configure_numerics(deterministic: bool) -> None:
    """When ``deterministic`` (``WorkerOptions.deterministic``: verify's workers), op determinism on
    (deterministic kernels, cuDNN algorithms and ``tf.data`` order; an op without a deterministic
    kernel raises UnimplementedError, an unseeded random op RuntimeError) and TensorFloat-32 off
    (float32 matmuls and convolutions keep 23 mantissa bits on Ampere and later, not TF32's 10):
    process-wide flags that start no runtime (on a CPU TF32 does not exist). Else TensorFlow's
    defaults, untouched."""
    if not deterministic:
        return
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()
    tf.config.experimental.enable_tensor_float_32_execution(False)


def op_determinism_enabled() -> bool:
    """Whether TensorFlow's op determinism is on in this process, read back from TensorFlow (its
    getter is not exported under ``tf.config``)."""
    from tensorflow.python.framework import config

    return bool(config.is_op_determinism_enabled())
