"""GPU energy from NVML, where available: total energy counters of this process's visible GPUs.

Uses NVIDIA's ``pynvml`` (package ``nvidia-ml-py``) if it is installed and the driver supports
``nvmlDeviceGetTotalEnergyConsumption`` (Volta and newer); otherwise every reading is None. The
visible GPUs are taken from ``CUDA_VISIBLE_DEVICES`` when it lists integer indices, else all.
"""

from __future__ import annotations

import os
from collections.abc import Callable


def energy_meter() -> Callable[[], float | None]:
    """A function returning the visible GPUs' total energy counter in joules (None: unavailable)."""
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        count = pynvml.nvmlDeviceGetCount()
        indices = ([int(i) for i in visible.split(",") if i.strip()] if visible else range(count))
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices if 0 <= i < count]
        if not handles:
            return lambda: None

        def read() -> float | None:
            try:
                return sum(pynvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in handles) / 1000.0
            except Exception:  # noqa: BLE001 - any NVML error means: no reading
                return None

        return read if read() is not None else (lambda: None)
    except Exception:  # noqa: BLE001 - no pynvml, no driver, integer parse of UUIDs
        return lambda: None
