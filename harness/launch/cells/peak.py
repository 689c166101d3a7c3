"""The run's matmul peak: one child process per measurement (:data:`PEAK_MODULE`), started at the
start of a run, between its passes and at its end, each measuring every compute dtype the run uses.
It is forked from the run's fork server where one serves (:mod:`harness.launch.system.forks`: with the
workers' environment it shares their server), else a fresh interpreter."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.contract.job import PEAK_MODULE
from harness.formulas.stats import log_t_half_width
from harness.launch.cells.probes import run_probe_processes
from harness.spec.axes import COMPUTE_DTYPE
from harness.spec.cell import Cell
from harness.spec.protocol import Platform

PEAK_TIMEOUT_S = 300.0
"""Seconds one peak process may take (import, then every dtype)."""

PEAK_WITHIN = 0.05
"""The closing peak processes go on until each dtype's peak has a 95% CI within ±5%, so that a
machine's peak tells machines 10% apart (:data:`PEAK_MAX` processes at most)."""

PEAK_MAX = 8
"""Peak processes a run measures at most: 3-5 s each on a 2-core CPU."""


@dataclass
class PeakLog:
    """Every peak measurement of a run: dtype -> each process's best FLOP/s (one device), and the
    float32 TF32 state; ``failures``: why a peak process gave nothing."""

    platform: Platform
    dtypes: tuple[str, ...]
    samples: dict[str, list[float]] = field(default_factory=dict)
    tensor_float_32: bool = False
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def processes(self) -> int:
        return max((len(v) for v in self.samples.values()), default=0)

    def wide(self) -> bool:
        """Whether a dtype's peak CI (log t over its processes) is wider than ±:data:`PEAK_WITHIN`."""
        return any(log_t_half_width(np.log(v)) > math.log1p(PEAK_WITHIN) for v in self.samples.values())

    def close(self, measure: Callable[[], None], left_s: Callable[[], float]) -> None:
        """``measure`` again while :meth:`wide` and another process, as long as the mean one so far,
        fits in ``left_s()`` seconds (:data:`PEAK_MAX` processes in all)."""
        while self.wide() and self.processes < PEAK_MAX and self.seconds / max(self.processes, 1) <= left_s():
            before = self.processes
            measure()
            if self.processes == before:  # a process that gave nothing: no use trying on
                return

    def measure(self, env: Mapping[str, str] | None = None) -> None:
        """Run one peak process now (``env``: variables added to its environment, the workers'
        own) and keep what it printed."""
        import time

        if not self.dtypes:
            return
        t0 = time.monotonic()
        argv = ["--device-kind", self.platform.device_kind, "--dtypes", ",".join(self.dtypes)]
        (result,) = run_probe_processes([argv], [dict(env or {})], PEAK_TIMEOUT_S, PEAK_MODULE, fork=True)
        self.seconds += time.monotonic() - t0
        records = [r for r in result.lines if "flops_per_sec" in r]
        for r in records:
            self.samples.setdefault(r["dtype"], []).append(float(r["flops_per_sec"]))
            self.tensor_float_32 = self.tensor_float_32 or bool(r.get("tensor_float_32"))
        if not records:
            self.failures.append(f"exit {result.returncode}: {result.stderr_tail[-300:]}")


def run_dtypes(cells: Sequence[Cell]) -> tuple[str, ...]:
    """The compute dtypes of the cells' precisions, float32 first."""
    found = {COMPUTE_DTYPE[c.precision] for c in cells}
    return tuple(sorted(found, key=lambda d: (d != "float32", d)))
