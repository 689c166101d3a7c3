"""The cells table's groups on what the cell used of the machine: energy (:class:`Energy`) and
GPU memory (:class:`Memory`). Pure: no pyarrow, no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import Col


@dataclass(frozen=True, kw_only=True)
class Energy:
    """Energy, where a counter exists."""

    energy_j_per_example: Annotated[
        float | None,
        Col(
            "J/example",
            "Energy per example, median over processes: on GPUs, NVML total-energy counters of the "
            "GPUs the process uses (not every GPU of the machine); on CPU hosts, the RAPL package "
            "counters (/sys/class/powercap intel-rapl:N energy_uj, Intel and AMD), which count every "
            "process on the packages (the machine's energy while it trains); read around the process's "
            "own windows only (in turns, its own window turns, while the other members wait; back to "
            "back, its warm-up and timed windows) / the examples trained in them; "
            "co-tenants (who meter the same devices): their mean power / their aggregate "
            "examples_per_sec. Null where no counter is readable (no NVML; no powercap, or "
            "energy_uj readable by root only) and for multi-worker cells.",
            figure=True,
            median=True,
        ),
    ] = None
    gpu_watts: Annotated[
        float | None,
        Col(
            "W",
            "Mean power over the metered windows (joules / seconds) of the counters energy_j_per_example "
            "reads (on CPU hosts the CPU packages', not a GPU's), median over processes; "
            "co-tenants: the mean of the tenants' readings.",
            figure=True,
            median=True,
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Memory:
    """GPU memory: what the cell's training held at most, and the limit it ran under."""

    gpu_memory_peak_mib: Annotated[
        float | None,
        Col(
            "MiB",
            "The most GPU memory TensorFlow's allocator held on any one of the process's GPUs "
            "(tf.config.experimental.get_memory_info's peak, from the build through the timed "
            "windows), median over processes: what this batch needs. Null on CPU.",
            median=True,
        ),
    ] = None
    gpu_memory_limit_mib: Annotated[
        float | None,
        Col(
            "MiB",
            "The memory limit of each logical GPU the process's replicas ran on (a GPU split by "
            "--replicas above the GPU count); null on whole GPUs and on CPU.",
        ),
    ] = None
