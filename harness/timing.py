"""The warm-up / calibrate / window / repeat protocol, around any ``run(steps) -> loss`` callable.

Every timed window ends with a host sync (``run`` returns the last loss as a Python float), and the
previous window's sync bounds its start, so a window's time covers exactly its own steps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.spec import Protocol

Clock = Callable[[], float]


@dataclass(frozen=True)
class Timings:
    """Raw timings of one cell. Seconds throughout; steps are optimizer steps."""

    compile_s: float
    window_steps: int
    window_seconds: tuple[float, ...]
    final_loss: float


def calibrated_window_steps(step_seconds: float, steps_per_execution: int, protocol: Protocol) -> int:
    """Steps per window so that a window lasts about ``protocol.window_s``: a multiple of
    steps_per_execution and at least ``protocol.min_window_steps``."""
    wanted = max(protocol.min_window_steps, protocol.window_s / max(step_seconds, 1e-9))
    return int(math.ceil(wanted / steps_per_execution) * steps_per_execution)


def measure(run: Callable[[int], float], steps_per_execution: int, protocol: Protocol,
            clock: Clock = time.perf_counter) -> Timings:
    """Time ``run`` by the protocol: first call (compile_s), a calibration call, warm-up windows,
    then ``protocol.repeats`` timed windows."""
    spe = steps_per_execution
    t0 = clock()
    run(spe)
    compile_s = clock() - t0

    probe = spe * max(1, math.ceil(protocol.min_window_steps / spe))
    t0 = clock()
    run(probe)
    steps = calibrated_window_steps((clock() - t0) / probe, spe, protocol)

    for _ in range(protocol.warmup_windows):
        run(steps)

    seconds: list[float] = []
    loss = float("nan")
    for _ in range(protocol.repeats):
        t0 = clock()
        loss = run(steps)
        seconds.append(clock() - t0)
    return Timings(compile_s, steps, tuple(seconds), loss)
