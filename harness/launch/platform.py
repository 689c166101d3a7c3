"""Facts about the host known without TensorFlow: GPUs and MIG instances (``nvidia-smi -L``), the
platform to plan for, the suite's git commit.

GPUs are found by parsing ``nvidia-smi``'s text rather than through NVML (``pynvml``) because
``nvidia-smi`` comes with every NVIDIA driver and lists MIG instances by the UUIDs
``CUDA_VISIBLE_DEVICES`` takes, while ``nvidia-ml-py`` is only in the ``cuda`` extra, so a CPU
install, where :func:`detect_platform` must still run, lacks it; ``/proc/cpuinfo`` and
``/proc/meminfo`` are read by hand for the reason :mod:`harness.launch.cpu_use` gives.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.spec.frameworks import FRAMEWORKS
from harness.spec.protocol import Platform


@dataclass(frozen=True)
class NvidiaGpus:
    """The GPUs a run may use: ``ids`` as ``CUDA_VISIBLE_DEVICES`` names them (indices, or MIG
    instances' UUIDs), and whether they are MIG instances."""

    ids: tuple[str, ...] = ()
    mig: bool = False


def parse_nvidia_smi_list(text: str, visible: str | None = None) -> NvidiaGpus:
    """The usable GPUs from ``nvidia-smi -L``: each GPU, or each MIG instance listed under it (a
    GPU in MIG mode computes only through its instances). ``visible``: this process's
    ``CUDA_VISIBLE_DEVICES``, whose entries (indices or UUIDs) are then the usable ones, so a
    worker's mask selects among them rather than among the host's GPUs."""
    gpus: list[str] = []
    migs: list[str] = []
    with_mig: set[str] = set()
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpus.append(line.split(":", 1)[0].split()[1])
        elif line.strip().startswith("MIG ") and "UUID: " in line and gpus:
            migs.append(line.split("UUID: ", 1)[1].rstrip(")").strip())
            with_mig.add(gpus[-1])
    ids = tuple(migs) + tuple(g for g in gpus if g not in with_mig)
    if visible is not None:
        entries = tuple(v.strip() for v in visible.split(",") if v.strip())
        usable = entries[: entries.index("-1")] if "-1" in entries else entries
        ids = usable[: len(ids)]
    return NvidiaGpus(ids, any(i.startswith("MIG-") for i in ids) or (bool(migs) and visible is None))


def nvidia_gpus() -> NvidiaGpus:
    """What ``nvidia-smi -L`` lists for this process (none without the tool or a driver)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return NvidiaGpus()
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return NvidiaGpus()
    return parse_nvidia_smi_list(out, os.environ.get("CUDA_VISIBLE_DEVICES"))


def parse_memory_mib(text: str, ids: tuple[str, ...]) -> int:
    """The smallest memory, MiB, of the GPUs ``ids`` (indices) from ``nvidia-smi
    --query-gpu=index,memory.total --format=csv,noheader,nounits``; 0 when unknown (MIG
    instances, which are not split, or output it cannot read)."""
    sizes: dict[str, int] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    found = [sizes[i] for i in ids if i in sizes]
    return min(found) if found and len(found) == len(ids) else 0


def gpu_memory_mib(ids: tuple[str, ...]) -> int:
    """:func:`parse_memory_mib` of this host's ``nvidia-smi`` (0 without the tool)."""
    exe = shutil.which("nvidia-smi")
    if not exe or not ids:
        return 0
    query = [exe, "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"]
    try:
        out = subprocess.run(query, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return parse_memory_mib(out, ids)


DEVICE_CHOICES = ("auto", "cpu", "gpu")


def detect_platform(device: str = "auto", cpu_devices: int = 2) -> Platform:
    """The Platform to plan for: GPUs if ``nvidia-smi`` sees any (or ``device="gpu"``), else CPU
    with ``cpu_devices`` logical devices (checked by :class:`Platform`)."""
    if device not in DEVICE_CHOICES:
        raise HarnessError(f"Received --device={device!r}; expected one of: {', '.join(DEVICE_CHOICES)}.")
    found = nvidia_gpus() if device != "cpu" else NvidiaGpus()
    if device == "gpu" and not found.ids:
        raise HarnessError(
            "Received --device=gpu, but nvidia-smi lists no GPU; expected --device cpu or auto."
        )
    frameworks = installed_frameworks()
    if not found.ids:
        return Platform("cpu", 0, cpu_devices, frameworks=frameworks)
    memory = 0 if found.mig else gpu_memory_mib(found.ids)
    return Platform(
        "gpu", len(found.ids), cpu_devices, found.ids, found.mig, frameworks=frameworks, gpu_memory_mib=memory
    )


def installed_frameworks() -> tuple[str, ...]:
    """The co-tenant frameworks this interpreter can import (looked up, not imported: importing JAX
    or PyTorch would cost seconds and memory in the parent)."""
    return tuple(name for name, f in FRAMEWORKS.items() if importlib.util.find_spec(f.module) is not None)


def git_sha() -> str:
    """Short commit of the suite's checkout, or "" outside git."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def available_memory_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """The memory the OS says new processes can use (``MemAvailable``), bytes; None where unknown."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


DISTRIBUTIONS = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly"),
    "keras": ("keras", "keras-nightly"),
}
"""The installed distributions that provide each package, in the order looked for."""


def installed_version(package: str) -> str:
    """The installed version of ``package`` (:data:`DISTRIBUTIONS`) from its metadata, without
    importing it; "" when not installed."""
    from importlib import metadata

    for name in DISTRIBUTIONS.get(package, (package,)):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return ""


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name (/proc/cpuinfo), or the platform module's guess."""
    import platform

    try:
        for line in Path(cpuinfo).read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(suite_version: str) -> dict[str, str]:
    """What a run's figures depend on, known in the parent: the CPU model and count, the GPUs, the
    suite, TensorFlow and Keras versions (a resumed run must match the journal's)."""
    return {
        "cpu": cpu_model(),
        "cpus": str(os.cpu_count() or 0),
        "gpus": ", ".join(gpu_models()),
        "suite": suite_version,
        "tensorflow": installed_version("tensorflow"),
        "keras": installed_version("keras"),
    }


def gpu_models(listing: str | None = None) -> list[str]:
    """The model of each GPU ``nvidia-smi -L`` lists (``listing``: its output; default: run it),
    e.g. ``NVIDIA H100 80GB HBM3``; empty without the tool or a GPU."""
    import re

    if listing is None:
        exe = shutil.which("nvidia-smi")
        if not exe:
            return []
        try:
            listing = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return []
    return re.findall(r"^GPU \d+: (.+?) \(UUID", listing, flags=re.M)
