"""The run's matmul peak: one child process per measurement (:data:`PEAK_MODULE`), started at the
start of a run, between its passes and at its end, each measuring every compute dtype the run uses.
It is forked from the run's fork server where one serves (:mod:`harness.launch.forks`: with the
workers' environment it shares their server), else a fresh interpreter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.contract.job import PEAK_MODULE
from harness.launch.probes import run_probe_processes
from harness.spec.axes import COMPUTE_DTYPE
from harness.spec.cell import Cell
from harness.spec.protocol import Platform

PEAK_TIMEOUT_S = 300.0
"""Seconds one peak process may take (import, then every dtype)."""


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
