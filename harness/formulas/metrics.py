"""Pure maths of the measurement protocol (no TensorFlow). Units in each docstring; the formulas
(window throughput, examples_per_sec, scaling_efficiency, mfu): results/README.md. A figure's CI over
processes and the coefficient of variation are in :mod:`harness.formulas.stats`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def throughput(examples: float, seconds: float) -> float:
    """Examples per second of one window."""
    if seconds <= 0:
        raise ValueError(f"window seconds must be > 0; received {seconds}")
    return examples / seconds


def median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def scaling_efficiency(throughput_n: float, devices: int, throughput_1: float) -> float:
    """throughput(N) / (N * throughput(1)); 1.0 is perfect scaling. Weak or strong alike: the
    caller picks the right 1-device baseline (same per-replica batch, or same global batch)."""
    if devices < 1 or throughput_1 <= 0:
        raise ValueError(f"need devices >= 1 and a positive baseline; got {devices}, {throughput_1}")
    return throughput_n / (devices * throughput_1)


def mfu(examples_per_sec: float, flops_per_example: float, peak_flops_per_sec: float) -> float:
    """Model FLOPs utilisation: achieved training FLOP/s over the measured peak FLOP/s."""
    if peak_flops_per_sec <= 0:
        raise ValueError(f"peak FLOP/s must be > 0; received {peak_flops_per_sec}")
    return examples_per_sec * flops_per_example / peak_flops_per_sec


def matmul_flops(n: int) -> int:
    """FLOPs of one n x n by n x n matrix product: 2 n^3."""
    return 2 * n**3


def straggler_ratio(per_worker_seconds: Sequence[Sequence[float]]) -> float:
    """Slowest over fastest worker, by each worker's median own window time (1.0: no straggler)."""
    medians = [median(s) for s in per_worker_seconds if len(s)]
    if not medians or min(medians) <= 0:
        return float("nan")
    return max(medians) / min(medians)


def update_imbalance(per_worker_updates: Sequence[Sequence[int]]) -> float:
    """Parameter server: the busiest worker's updates over the idlest's, summed over the timed
    windows (1.0: every worker ran as many; inf: a worker ran none). Under asynchronous updates a
    slower worker runs fewer, so this is the straggler ratio in work rather than in time."""
    totals = [sum(u) for u in per_worker_updates]
    if not totals or max(totals) <= 0:
        return float("nan")
    return float("inf") if min(totals) == 0 else max(totals) / min(totals)
