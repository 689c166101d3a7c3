"""How a cell is timed (:class:`Protocol`) and what the host offers (:class:`Platform`). Pure data."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import SpecError


@dataclass(frozen=True)
class Protocol:
    """How each cell is timed (DESIGN.md section 3).

    After a first call (``compile_s``), the window length is calibrated to about ``window_s`` seconds
    (a multiple of steps_per_execution, at least ``min_window_steps`` updates); then
    ``warmup_windows`` untimed and ``repeats`` timed windows run back to back, each ending in a host
    sync.
    """

    repeats: int = 5
    window_s: float = 1.0
    warmup_windows: int = 1
    min_window_steps: int = 10
    cell_timeout_s: float = 600.0
    rendezvous_timeout_s: float = 120.0
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "repeats": self.repeats >= 2, "window_s": 0 < self.window_s < 3600,
            "warmup_windows": self.warmup_windows >= 0, "min_window_steps": self.min_window_steps >= 1,
            "cell_timeout_s": 0 < self.cell_timeout_s < float("inf"),
            "rendezvous_timeout_s": 0 < self.rendezvous_timeout_s < float("inf"), "seed": self.seed >= 0,
        }
        accepted = {
            "repeats": "an integer of at least 2 (a CI needs two windows)",
            "window_s": "seconds, more than 0 and less than 3600",
            "warmup_windows": "an integer >= 0", "min_window_steps": "an integer >= 1",
            "cell_timeout_s": "seconds > 0", "rendezvous_timeout_s": "seconds > 0",
            "seed": "an integer >= 0",
        }
        for name, ok in checks.items():
            if not ok:
                raise SpecError(f"Received --{name.replace('_', '-')}={getattr(self, name)!r}; "
                                f"expected {accepted[name]}.")


@dataclass(frozen=True)
class Platform:
    """What the host offers, as known without TensorFlow.

    ``cpu_devices`` is how many logical CPU devices a CPU-only host may split into for replicas.
    """

    device_kind: str = "cpu"
    gpu_count: int = 0
    cpu_devices: int = 2

    @property
    def max_replicas(self) -> int:
        return self.gpu_count if self.device_kind == "gpu" else self.cpu_devices
