"""Where a GPU's time went in a profiled window: interval arithmetic over a trace. Pure. A trace
(TensorFlow's profiler, read by :mod:`harness.worker.profile`) gives on one clock (ns) the window,
each GPU's kernel and copy intervals, which are collectives (NCCL), and the host's waits for the
next input. The window splits into four disjoint parts that add up to it exactly, on the busiest
GPU (the one a step in sync waits for): device, collective, input and host, as
docs/explanation/gpus.md (section 5) defines them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Interval = tuple[float, float]
"""[start, end) on the trace's clock (ns)."""


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals merged: sorted, disjoint, none empty."""
    out: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def total(intervals: Iterable[Interval]) -> float:
    """Length covered by the intervals (overlaps counted once), in their unit."""
    return sum(end - start for start, end in union(intervals))


def clip(intervals: Iterable[Interval], window: Interval) -> list[Interval]:
    """The parts of the intervals inside ``window``, merged."""
    lo, hi = window
    return union((max(s, lo), min(e, hi)) for s, e in intervals)


def subtract(a: Iterable[Interval], b: Iterable[Interval]) -> list[Interval]:
    """The parts of ``a`` covered by no interval of ``b``, merged."""
    out: list[Interval] = []
    cuts = union(b)
    for start, end in union(a):
        cursor = start
        for cs, ce in cuts:
            if ce <= cursor or cs >= end:
                continue
            if cs > cursor:
                out.append((cursor, cs))
            cursor = max(cursor, ce)
        if cursor < end:
            out.append((cursor, end))
    return out


def intersect(a: Iterable[Interval], b: Iterable[Interval]) -> list[Interval]:
    """The parts covered by both ``a`` and ``b``, merged."""
    ua = union(a)
    return subtract(ua, subtract(ua, b))


@dataclass(frozen=True)
class GpuTimeline:
    """One GPU's activity in the window (ns on the trace's clock)."""

    busy: Sequence[Interval]
    """Kernels and memory copies that are not collectives."""
    collectives: Sequence[Interval] = ()
    """Collective kernels (NCCL)."""


@dataclass(frozen=True)
class Trace:
    """What a profiled window recorded (ns on one clock)."""

    window: Interval
    gpus: Mapping[str, GpuTimeline]
    """By device plane name (``/device:GPU:0``); empty when the profiler recorded no GPU activity."""
    input_waits: Sequence[Interval] = ()
    """The host waiting for the next input element (``IteratorGetNext`` and the like)."""


@dataclass(frozen=True)
class WindowSplit:
    """The window's four disjoint parts (ns); they add up to ``window_ns``."""

    gpu: str
    window_ns: float
    device_ns: float
    collective_ns: float
    input_ns: float
    host_ns: float


def split(trace: Trace) -> WindowSplit | None:
    """The window split on its busiest GPU (see the module doc); None when no GPU was recorded."""
    if not trace.gpus:
        return None

    def covered(t: GpuTimeline) -> float:
        return total(clip([*t.busy, *t.collectives], trace.window))

    gpu = max(sorted(trace.gpus), key=lambda name: covered(trace.gpus[name]))
    t = trace.gpus[gpu]
    device = clip(t.busy, trace.window)
    collective = subtract(clip(t.collectives, trace.window), device)
    idle = subtract([trace.window], [*device, *collective])
    waiting = intersect(idle, clip(trace.input_waits, trace.window))
    return WindowSplit(
        gpu=gpu,
        window_ns=trace.window[1] - trace.window[0],
        device_ns=total(device),
        collective_ns=total(collective),
        input_ns=total(waiting),
        host_ns=total(subtract(idle, waiting)),
    )
