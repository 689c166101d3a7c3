"""GPU energy reads only the cell's GPUs, found by PCI bus id (a fake NVML; no GPU needed)."""

from __future__ import annotations

from harness.worker.energy import energy_meter, pci_bus_ids

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
