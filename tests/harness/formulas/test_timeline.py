"""The GPU window's split: interval arithmetic, and four parts that add up to the window."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.formulas.timeline import (
    GpuTimeline,
    Trace,
    clip,
    intersect,
    split,
    subtract,
    total,
    union,
)


def test_union_merges_overlapping_and_touching_intervals_and_drops_empty_ones() -> None:
    assert union([(5, 7), (0, 2), (1, 3), (3, 4), (6, 6), (9, 8)]) == [(0, 4), (5, 7)]


def test_subtract_intersect_and_clip() -> None:
    assert subtract([(0, 10)], [(2, 3), (5, 7), (9, 12)]) == [(0, 2), (3, 5), (7, 9)]
    assert intersect([(0, 4), (6, 10)], [(3, 7)]) == [(3, 4), (6, 7)]
    assert clip([(-5, 2), (8, 15)], (0, 10)) == [(0, 2), (8, 10)]
    assert total([(0, 4), (2, 6)]) == 6


intervals = st.lists(st.tuples(st.integers(-20, 120), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])))


@given(intervals, intervals, intervals)
def test_the_four_parts_add_up_to_the_window_exactly(busy, collectives, waits) -> None:  # type: ignore[no-untyped-def]
    trace = Trace(window=(0, 100), gpus={"/device:GPU:0": GpuTimeline(busy, collectives)}, input_waits=waits)
    s = split(trace)
    assert s is not None
    assert s.device_ns + s.collective_ns + s.input_ns + s.host_ns == pytest.approx(s.window_ns)
    assert min(s.device_ns, s.collective_ns, s.input_ns, s.host_ns) >= 0


def test_each_part_of_a_known_window() -> None:
    # window 0-100: kernels 10-40, an all-reduce 30-50 (10 of it under a kernel), input wait 60-80
    # while the GPU is idle and 20-30 while it is busy (not counted: the GPU was not waiting)
    gpu = GpuTimeline(busy=[(10, 40)], collectives=[(30, 50)])
    s = split(Trace((0, 100), {"/device:GPU:0": gpu}, input_waits=[(60, 80), (20, 30)]))
    assert s is not None
    assert (s.device_ns, s.collective_ns, s.input_ns, s.host_ns) == (30, 10, 20, 40)


def test_the_busiest_gpu_decides_and_no_gpu_gives_none() -> None:
    gpus = {"/device:GPU:0": GpuTimeline([(0, 10)]), "/device:GPU:1": GpuTimeline([(0, 60)])}
    s = split(Trace((0, 100), gpus))
    assert s is not None and s.gpu == "/device:GPU:1" and s.device_ns == 60 and s.host_ns == 40
    assert split(Trace((0, 100), {})) is None


def test_activity_outside_the_window_is_not_counted() -> None:
    s = split(Trace((100, 200), {"/device:GPU:0": GpuTimeline([(0, 150), (190, 300)])}))
    assert s is not None and s.device_ns == 60 and s.host_ns == 40
