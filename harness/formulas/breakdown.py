"""Why a cell runs at the speed it does: the step-time breakdown's derived figures and a verdict.

Pure. The parts are measured per process by :mod:`harness.worker.breakdown` (seconds per update,
median over the processes that measured them); here, with step_s = effective_batch /
examples_per_sec:

    overlap = (compute_s + allreduce_s + input_s + dispatch_s - step_s) / step_s

> 0: parts overlap inside the step (e.g. the next batch is prefetched while the replicas compute);
< 0: the step holds time no part explains (the remainder: the optimizer's arithmetic, waiting on
the slowest replica, contention between replicas that share cores).

The verdict (``bound``) is the part with the largest share of step_s; ``bound_reason`` gives every
share and the knob that acts on that part (:data:`BOUNDS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.spec.cell import Cell
from harness.contract.records import Status

PARTS = ("compute_s", "allreduce_s", "input_s", "dispatch_s")


@dataclass(frozen=True)
class Bound:
    """One verdict: the part that dominates and what would help."""

    name: str
    part: str
    advice: str


BOUNDS: tuple[Bound, ...] = (
    Bound("compute", "compute_s",
          "a faster device, lower precision (mixed_bfloat16 / mixed_float16), or more replicas on "
          "devices that add compute (logical CPU devices share one CPU's cores and add none)"),
    Bound("communication", "allreduce_s",
          "more accumulation steps or a larger per-replica batch (fewer all-reduces per example), "
          "or another cross-device op / communication (compare them with --sweep collectives)"),
    Bound("input", "input_s",
          "a faster input pipeline (cache, prefetch, parallel map) or synthetic data to confirm"),
    Bound("dispatch", "dispatch_s",
          "more steps_per_execution (one host dispatch per call of that many updates) or a larger "
          "batch per update"),
)


def _num(row: Mapping[str, Any], key: str) -> float | None:
    v = row.get(key)
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return float(v)


def verdict(step_s: float, parts: Mapping[str, float]) -> tuple[str, str]:
    """(bound, reason) from the step time and its four parts (seconds per update)."""
    shares = {b: parts[b.part] / step_s for b in BOUNDS}
    top = max(shares, key=lambda b: shares[b])
    listed = ", ".join(f"{b.name} {shares[b]:.0%}" for b in BOUNDS)
    over = (sum(parts.values()) - step_s) / step_s
    return top.name, (f"{top.name}-bound: of the {step_s * 1e3:.3g} ms step, {listed} "
                      f"(overlap {over:+.0%}); try {top.advice}")


def columns(cell: Cell, row: Mapping[str, Any]) -> dict[str, Any]:
    """step_s always (for an ok row); overlap, bound and bound_reason when all four parts are known."""
    eps = _num(row, "examples_per_sec")
    if row.get("status") != Status.OK or not eps:
        return {}
    step = cell.effective_batch / eps
    out: dict[str, Any] = {"step_s": step}
    parts = {k: _num(row, k) for k in PARTS}
    if any(v is None for v in parts.values()):
        return out
    known = {k: float(v) for k, v in parts.items() if v is not None}
    bound, reason = verdict(step, known)
    return {**out, "overlap": (sum(known.values()) - step) / step, "bound": bound,
            "bound_reason": reason}
