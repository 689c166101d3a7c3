"""GPU energy reads only the cell's GPUs, found by PCI bus id (a fake NVML; no GPU needed); CPU
energy sums the RAPL package counters of a fake powercap tree, wrap-arounds added back."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.worker.energy import (
    cell_energy_meter,
    counter_delta,
    energy_meter,
    package_domains,
    pci_bus_ids,
    rapl_meter,
)

DESCS = {
    "/device:GPU:0": "device: 0, name: NVIDIA H100, pci bus id: 0000:3b:00.0, compute capability: 9.0",
    "/device:GPU:1": "device: 1, name: NVIDIA H100, pci bus id: 0000:5e:00.0, compute capability: 9.0",
}


class FakeNvml:
    """Four GPUs in PCI order; millijoules per GPU; ``broken``: bus ids without a counter."""

    def __init__(self, broken: tuple[str, ...] = ()) -> None:
        self.energy = {
            "0000:1a:00.0": 1_000_000,
            "0000:3b:00.0": 2_000_000,
            "0000:5e:00.0": 3_000_000,
            "0000:86:00.0": 4_000_000,
        }
        self.broken = broken

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> str:
        if bus_id not in self.energy:
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return bus_id

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if handle in self.broken:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.energy[handle]


def test_bus_ids_of_the_devices_the_cell_uses():
    assert pci_bus_ids(DESCS, ["/job:localhost/replica:0/task:0/device:GPU:1"]) == ["0000:5e:00.0"]
    assert pci_bus_ids(DESCS, ["GPU:0", "GPU:1"]) == ["0000:3b:00.0", "0000:5e:00.0"]
    assert pci_bus_ids(DESCS, ["GPU:2"]) is None


def test_only_the_cells_gpus_are_summed_not_every_gpu_of_the_machine():
    meter = energy_meter(pci_bus_ids(DESCS, ["GPU:0"]), FakeNvml())
    assert meter() == 2000.0  # joules of 0000:3b:00.0 alone (the machine's four sum to 10,000)
    assert energy_meter(pci_bus_ids(DESCS, ["GPU:0", "GPU:1"]), FakeNvml())() == 5000.0


def test_no_reading_rather_than_a_wrong_one():
    assert energy_meter(["0000:3b:00.0"], FakeNvml(broken=("0000:3b:00.0",)))() is None
    assert energy_meter(["0000:99:00.0"], FakeNvml())() is None
    assert energy_meter(None, FakeNvml())() is None


MAX_UJ = 262_143_328_850
"""``max_energy_range_uj`` as an AMD EPYC host writes it (about 262 kJ)."""


def _domain(root: Path, name: str, label: str, energy_uj: int, max_uj: int = MAX_UJ) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(label + "\n")
    (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return folder


def _set(folder: Path, energy_uj: int) -> None:
    (folder / "energy_uj").write_text(f"{energy_uj}\n")


@pytest.fixture
def powercap(tmp_path: Path) -> dict[str, Path]:
    """Two packages, each with a core sub-domain, a DRAM domain and the control-type folder."""
    root = tmp_path / "powercap"
    found = {
        "p0": _domain(root, "intel-rapl:0", "package-0", 5_000_000),
        "p1": _domain(root, "intel-rapl:1", "package-1", 7_000_000),
        "core": _domain(root, "intel-rapl:0:0", "core", 1_000_000),
        "dram": _domain(root, "intel-rapl:2", "dram", 9_000_000),
    }
    (root / "intel-rapl").mkdir()
    return {"root": root, **found}


def test_only_the_package_domains_are_summed(powercap: dict[str, Path]) -> None:
    assert package_domains(powercap["root"]) == [powercap["p0"], powercap["p1"]]
    meter = rapl_meter(powercap["root"])
    before = meter()
    assert before == pytest.approx(12.0)  # 5 J + 7 J: not the core part, not DRAM
    _set(powercap["p0"], 6_500_000)
    _set(powercap["core"], 99_000_000)
    assert meter() == pytest.approx(13.5)


def test_a_counter_that_wraps_adds_the_wrapped_part_back(powercap: dict[str, Path]) -> None:
    assert counter_delta(100, 250, 1000) == 150
    assert counter_delta(900, 50, 1000) == 150  # 100 to the wrap, 50 after it
    meter = rapl_meter(powercap["root"])
    before = meter()
    assert before is not None
    _set(powercap["p0"], MAX_UJ - 1_000_000)  # 1 J short of the wrap
    meter()
    _set(powercap["p0"], 2_000_000)  # past it: 1 J to the wrap and 2 J after
    after = meter()
    assert after is not None
    assert after - before == pytest.approx((MAX_UJ - 1_000_000 - 5_000_000 + 1_000_000 + 2_000_000) / 1e6)


def test_no_reading_where_nothing_is_readable(powercap: dict[str, Path], tmp_path: Path) -> None:
    assert rapl_meter(tmp_path / "no-powercap")() is None  # this VM: no /sys/class/powercap
    assert rapl_meter(powercap["dram"].parent / "intel-rapl")() is None  # no package domain
    (powercap["p1"] / "energy_uj").unlink()  # root-only energy_uj reads as an error too
    assert rapl_meter(powercap["root"])() is None
    live = _domain(tmp_path / "other", "intel-rapl:0", "package-0", 1_000_000)
    meter = rapl_meter(tmp_path / "other")
    assert meter() == pytest.approx(1.0)
    (live / "energy_uj").unlink()  # gone mid-cell: no reading rather than a wrong one
    assert meter() is None


def test_a_cpu_cell_is_metered_by_rapl_and_other_devices_by_none(
    powercap: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("harness.worker.energy.rapl_meter", lambda root=powercap["root"]: rapl_meter(root))
    assert cell_energy_meter(["/device:CPU:0"], "CPU")() == pytest.approx(12.0)
    assert cell_energy_meter(["/device:TPU:0"], "TPU")() is None
