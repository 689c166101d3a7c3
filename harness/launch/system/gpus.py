"""What the operating system (``/sys/class/drm``, every vendor's GPUs) and the NVIDIA driver (NVML:
processes holding GPU memory) say about GPUs, without TensorFlow (reads only)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from harness.contract.probes import GpuProcess, OsGpu

PCI_VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel"}
"""PCI vendor ids of GPU makers."""


def os_gpus(drm: Path = Path("/sys/class/drm")) -> list[OsGpu]:
    """DRM cards (``cardN``, not their connectors) with a PCI vendor id; empty off Linux."""
    found = []
    for card in sorted(drm.glob("card[0-9]*")):
        if "-" in card.name:
            continue
        try:
            vendor_id = (card / "device" / "vendor").read_text().strip()
        except OSError:
            continue
        pci = os.path.basename(os.path.realpath(card / "device"))
        found.append(OsGpu(card.name, PCI_VENDORS.get(vendor_id, vendor_id), pci))
    return found


def gpu_processes() -> tuple[list[GpuProcess], str]:
    """(processes on every NVIDIA GPU, "" or why NVML could not be asked)."""
    try:
        import pynvml
    except ImportError:
        return [], "NVML not available (pip install nvidia-ml-py, part of the cuda extra)"
    try:
        pynvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - no driver: pynvml raises its own NVMLError types
        return [], f"NVML could not start: {e}"
    try:
        found = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            procs = list(pynvml.nvmlDeviceGetComputeRunningProcesses(handle)) + list(
                pynvml.nvmlDeviceGetGraphicsRunningProcesses(handle)
            )
            for p in procs:
                used = getattr(p, "usedGpuMemory", None)
                found.append(GpuProcess(i, int(p.pid), int(used) if used else None))
        return found, ""
    except Exception as e:  # noqa: BLE001
        return [], f"NVML query failed: {e}"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
