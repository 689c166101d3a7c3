"""GPU energy from NVML, where available: total energy counters of the GPUs the cell runs on.

Uses NVIDIA's ``pynvml`` (package ``nvidia-ml-py``) if it is installed and the driver supports
``nvmlDeviceGetTotalEnergyConsumption`` (Volta and newer); otherwise every reading is None. The GPUs
are found by PCI bus id (TensorFlow's device description gives it), never by index: NVML numbers
every GPU of the machine in PCI order, while CUDA's order and ``CUDA_VISIBLE_DEVICES`` or
``tf.config.set_visible_devices`` decide what this process sees. A GPU that cannot be found or read
makes the whole reading None rather than a sum over the wrong GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

BUS_ID = re.compile(r"pci bus id: ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)")


def _short(name: str) -> str:
    """``/job:localhost/replica:0/task:0/device:GPU:1`` -> ``GPU:1``."""
    return name.rsplit("device:", 1)[-1].upper()


def pci_bus_ids(descriptions: Mapping[str, str], used: Sequence[str]) -> list[str] | None:
    """The PCI bus ids of the ``used`` TensorFlow devices, from each device's
    ``physical_device_desc`` (by device name); None when one is missing."""
    by_name = {_short(name): desc for name, desc in descriptions.items()}
    ids = []
    for name in used:
        match = BUS_ID.search(by_name.get(_short(name), ""))
        if match is None:
            return None
        ids.append(match.group(1))
    return ids


def device_descriptions() -> dict[str, str]:
    """TensorFlow's local GPU devices: name -> physical_device_desc."""
    from tensorflow.python.client import device_lib

    return {d.name: d.physical_device_desc for d in device_lib.list_local_devices() if d.device_type == "GPU"}


def energy_meter(bus_ids: Sequence[str] | None = None, nvml: Any = None) -> Callable[[], float | None]:
    """A function returning the total energy counter of the GPUs at ``bus_ids``, in joules (None:
    unavailable). ``nvml``: the pynvml module (tests pass a fake)."""
    if not bus_ids:
        return lambda: None
    try:
        if nvml is None:
            import pynvml as nvml  # type: ignore[no-redef]
        nvml.nvmlInit()
        handles = [nvml.nvmlDeviceGetHandleByPciBusId(b) for b in bus_ids]

        def read() -> float | None:
            try:
                return sum(nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in handles) / 1000.0
            except Exception:  # noqa: BLE001 - any NVML error means: no reading
                return None

        return read if read() is not None else (lambda: None)
    except Exception:  # noqa: BLE001 - no pynvml, no driver, a GPU NVML cannot find
        return lambda: None


def cell_energy_meter(devices: Sequence[str]) -> Callable[[], float | None]:
    """The meter of the GPUs named ``devices`` (TensorFlow device names) in this process."""
    try:
        ids = pci_bus_ids(device_descriptions(), devices)
    except Exception:  # noqa: BLE001 - no device list: no reading
        return lambda: None
    return energy_meter(ids)
