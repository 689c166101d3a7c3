"""Facts about the host known without TensorFlow: GPUs (``nvidia-smi``), the platform to plan for,
the suite's git commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.errors import HarnessError
from harness.spec.protocol import Platform


def count_nvidia_gpus() -> int:
    """GPUs that ``nvidia-smi -L`` lists (0 without the tool or a driver)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    n = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    if visible is not None:
        n = min(n, len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"]))
    return n


DEVICE_CHOICES = ("auto", "cpu", "gpu")


def detect_platform(device: str = "auto", cpu_devices: int = 2) -> Platform:
    """The Platform to plan for: GPUs if ``nvidia-smi`` sees any (or ``device="gpu"``), else CPU
    with ``cpu_devices`` logical devices."""
    if device not in DEVICE_CHOICES:
        raise HarnessError(f"Received --device={device!r}; expected one of: {', '.join(DEVICE_CHOICES)}.")
    if cpu_devices < 1:
        raise HarnessError(f"Received --cpu-devices={cpu_devices!r}; expected an integer of at least 1.")
    gpus = count_nvidia_gpus() if device != "cpu" else 0
    if device == "gpu" and gpus == 0:
        raise HarnessError("Received --device=gpu, but nvidia-smi lists no GPU; expected --device cpu or auto.")
    return Platform("gpu" if gpus else "cpu", gpus, cpu_devices)


def git_sha() -> str:
    """Short commit of the suite's checkout, or "" outside git."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""
