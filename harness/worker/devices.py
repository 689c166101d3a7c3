"""Device set-up at worker start: the cell's GPUs, or N logical CPU devices."""

from __future__ import annotations

from harness.spec.protocol import Platform


def configure_devices(platform: Platform, replicas: int) -> tuple[str, list[str]]:
    """Make ``replicas`` devices visible (GPUs, or logical CPUs); returns (device type, names)."""
    import tensorflow as tf

    if platform.device_kind == "gpu":
        gpus = tf.config.list_physical_devices("GPU")[:replicas]
        tf.config.set_visible_devices(gpus, "GPU")
        for g in gpus:
            tf.config.experimental.set_memory_growth(g, True)
        kind = "GPU"
    else:
        tf.config.set_visible_devices([], "GPU")
        cpus = tf.config.list_physical_devices("CPU")
        if replicas > 1:
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
        kind = "CPU"
    devices = [d.name for d in tf.config.list_logical_devices(kind)]
    if len(devices) < replicas:
        raise RuntimeError(f"TensorFlow sees {len(devices)} {kind} device(s), the cell needs {replicas}"
                           + (" (a CPU-only TensorFlow build? install the CUDA build, or run with "
                              "--device cpu)" if kind == "GPU" else ""))
    return kind, devices
