"""Where a GPU update's time goes (docs/explanation/gpus.md, section 5): one window of the cell's own
training function (``Trainer.windows``; under ``fit`` with its leading epoch) under TensorFlow's
profiler, marked on the host by a ``TraceMe`` (:data:`MARK`), about :data:`PROFILE_WINDOW_S` long,
read back as a timeline and split by :func:`harness.formulas.timeline.split`. Per update is over
every update the marked span ran (the trainer's update counter before and after)."""

from __future__ import annotations

import glob
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from harness.formulas.timeline import GpuTimeline, Interval, Trace, split
from harness.spec.cell import Cell

PROFILE_WINDOW_S = 0.3
"""Target length of the profiled window (s): a few thousand kernels of a small model."""

MARK = "tfsb_profiled_window"
"""The host trace event that spans the profiled window."""

INPUT_WAITS = ("IteratorGetNext", "GetNextFromShard")
"""Host events whose name holds one of these: the step waiting for its next input element."""

COLLECTIVES = ("nccl",)
"""GPU events whose name (lower case) holds one of these: collective kernels."""

DERIVED_LINES = frozenset(
    {
        "Steps",
        "XLA Modules",
        "XLA Ops",
        "TensorFlow Ops",
        "TensorFlow Name Scope",
        "Source code",
        "Launch Stats",
    }
)
"""Lines of a GPU plane that summarise others (TensorBoard adds them); never counted as activity."""


class NoDeviceTrace(RuntimeError):
    """The profiler recorded nothing on any GPU (CUPTI not loadable, or no GPU work)."""


def _events(plane: Any, skipped: frozenset[str] = frozenset()) -> Iterator[tuple[str, Interval]]:
    """(name, interval in ns) of every event on ``plane``'s lines but the ``skipped`` ones."""
    for line in plane.lines:
        if line.name in skipped:
            continue
        for event in line.events:
            start = line.timestamp_ns + event.offset_ps / 1e3
            yield plane.event_metadata[event.metadata_id].name, (start, start + event.duration_ps / 1e3)


def read_trace(space: Any) -> Trace:
    """The :class:`~harness.formulas.timeline.Trace` in an ``XSpace`` (the profiler's xplane
    proto, or anything shaped like it): GPU planes (``/device:GPU:N``) give each GPU's kernels and
    copies; host planes (``/host:CPU``) the window's mark and the input waits."""
    window: Interval | None = None
    gpus: dict[str, GpuTimeline] = {}
    waits: list[Interval] = []
    for plane in space.planes:
        if plane.name.startswith("/device:GPU:"):
            busy: list[Interval] = []
            collectives: list[Interval] = []
            for name, interval in _events(plane, DERIVED_LINES):
                (collectives if any(c in name.lower() for c in COLLECTIVES) else busy).append(interval)
            if busy or collectives:
                gpus[plane.name] = GpuTimeline(busy, collectives)
        elif plane.name.startswith("/host:CPU"):
            for name, interval in _events(plane):
                if name == MARK:
                    window = interval
                elif any(w in name for w in INPUT_WAITS):
                    waits.append(interval)
    if window is None:
        raise ValueError(f"the profile holds no {MARK!r} event")
    return Trace(window=window, gpus=gpus, input_waits=waits)


def profiled(run: Callable[[], object]) -> Trace:
    """``run()`` under the profiler, inside the :data:`MARK` event; its trace."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=2, python_tracer_level=0, device_tracer_level=1
    )
    with tempfile.TemporaryDirectory(prefix="tfsb-profile-") as logdir:
        tf.profiler.experimental.start(logdir, options=options)
        try:
            with tf.profiler.experimental.Trace(MARK):
                run()
        finally:
            tf.profiler.experimental.stop()
        files = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")))
        if not files:
            raise NoDeviceTrace("the profiler wrote no trace")
        space = xplane_pb2.XSpace()
        with open(files[-1], "rb") as f:
            space.ParseFromString(f.read())
    return read_trace(space)


def window_steps(step_s: float, steps_per_execution: int, window_s: float = PROFILE_WINDOW_S) -> int:
    """Updates for a window of about ``window_s`` at ``step_s`` s per update: a multiple of
    steps_per_execution, at least one call."""
    calls = math.ceil(window_s / max(step_s, 1e-9) / steps_per_execution)
    return max(1, calls) * steps_per_execution


def measure_profile(built: Any, cell: Cell, step_s: float) -> dict[str, float]:
    """profiled_step_s, device_s, collective_s, input_wait_s and host_s (s per update) of one
    profiled window of the cell's training function; ``step_s``: the timed windows' step (s per
    update), to size the window. Raises :class:`NoDeviceTrace` when no GPU activity was
    recorded."""
    steps = window_steps(step_s, cell.steps_per_execution)
    trainer = built.trainer
    trainer.windows(steps, 1)  # this window length once before the profile (no first-call cost in it)
    before = trainer.updates[0]
    trace = profiled(lambda: trainer.windows(steps, 1))
    updates = trainer.updates[0] - before
    parts = split(trace)
    if parts is None:
        raise NoDeviceTrace(
            "the profiler recorded no GPU activity (is CUPTI, libcupti.so, on the library path?)"
        )
    per = 1e-9 / max(updates, 1)
    return {
        "profiled_step_s": parts.window_ns * per,
        "device_s": parts.device_ns * per,
        "collective_s": parts.collective_ns * per,
        "input_wait_s": parts.input_ns * per,
        "host_s": parts.host_ns * per,
    }
