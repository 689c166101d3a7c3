"""Energy counters around a cell: NVML's for the cell's GPUs, the CPU packages' RAPL counters
(powercap) for a CPU cell; where neither can be read, every reading is None (what the figure counts:
``energy_j_per_example`` in results/README.md).

GPUs: ``pynvml`` (package ``nvidia-ml-py``) where installed and the driver has
``nvmlDeviceGetTotalEnergyConsumption`` (Volta and newer). GPUs are found by PCI bus id (from
TensorFlow's device description), never by index (NVML numbers every GPU in PCI order; CUDA's
order, ``CUDA_VISIBLE_DEVICES`` and ``tf.config.set_visible_devices`` decide what this process
sees); a GPU not found or read makes the reading None rather than a sum over the wrong GPUs.

CPUs: one ``energy_uj`` counter per package (``name`` ``package-N``; its sub-domains, cores or DRAM,
are parts and are not added). Each counter wraps at ``max_energy_range_uj`` (about 262 kJ: over 20
minutes at 200 W), added back by a meter read once per wrap."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.worker.devices import short_name

BUS_ID = re.compile(r"pci bus id: ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)")


def pci_bus_ids(descriptions: Mapping[str, str], used: Sequence[str]) -> list[str] | None:
    """The PCI bus ids of the ``used`` TensorFlow devices, from each device's
    ``physical_device_desc`` (by device name); None when one is missing."""
    by_name = {short_name(name): desc for name, desc in descriptions.items()}
    found = [BUS_ID.search(by_name.get(short_name(name), "")) for name in used]
    return [match.group(1) for match in found if match] if all(found) else None


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


POWERCAP = Path("/sys/class/powercap")


def package_domains(root: Path = POWERCAP) -> list[Path]:
    """The CPU packages' RAPL domains under ``root``: the top-level ``intel-rapl:N`` folders whose
    ``name`` starts with ``package`` (none where there is no powercap interface)."""
    found = []
    for folder in sorted(root.glob("intel-rapl:*")):
        if folder.name.count(":") != 1:  # intel-rapl:N:M: a part of package N
            continue
        try:
            name = (folder / "name").read_text().strip()
        except OSError:
            continue
        if name.startswith("package"):
            found.append(folder)
    return found


def counter_delta(before: int, after: int, max_range: int) -> int:
    """What a counter that wraps at ``max_range`` (same units) added from ``before`` to ``after``:
    one wrap at most, as when it is read at least once per wrap."""
    return after - before if after >= before else after + max_range - before


def rapl_meter(root: Path = POWERCAP) -> Callable[[], float | None]:
    """A function returning the CPU packages' energy (:func:`package_domains`) in joules since a
    fixed start, wrap-arounds added back (:func:`counter_delta`); differences of two readings are
    the energy between them. None: no package domain, or one it cannot read (``root``: where
    powercap is; tests pass a fake tree)."""
    domains = package_domains(root)
    if not domains:
        return lambda: None

    def values(file: str) -> list[int] | None:
        try:
            return [int((d / file).read_text()) for d in domains]
        except (OSError, ValueError):
            return None

    first, wraps = values("energy_uj"), values("max_energy_range_uj")
    if first is None or wraps is None:
        return lambda: None
    last, total_uj = list(first), [sum(first)]

    def read() -> float | None:
        now = values("energy_uj")
        if now is None:
            return None
        total_uj[0] += sum(counter_delta(b, a, m) for b, a, m in zip(last, now, wraps, strict=True))
        last[:] = now
        return total_uj[0] / 1e6

    return read


def cell_energy_meter(devices: Sequence[str], device_type: str = "GPU") -> Callable[[], float | None]:
    """The meter of the GPUs named ``devices`` (TensorFlow device names) in this process; of a CPU
    cell (``device_type`` ``CPU``), the CPU packages' RAPL counters (:func:`rapl_meter`)."""
    if device_type == "CPU":
        return rapl_meter()
    if device_type != "GPU":
        return lambda: None
    try:
        from tensorflow.python.client import device_lib

        local = device_lib.list_local_devices()
        ids = pci_bus_ids({d.name: d.physical_device_desc for d in local if d.device_type == "GPU"}, devices)
    except Exception:  # noqa: BLE001 - no device list: no reading
        return lambda: None
    return energy_meter(ids)
