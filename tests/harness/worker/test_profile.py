"""Reading TensorFlow's profile of one window: the xplane's GPU and host planes into a timeline;
on a CPU (``tf``) the real profiler's window mark and input waits, and no GPU."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from harness.formulas.timeline import split
from harness.worker.profile import MARK, NoDeviceTrace, measure_profile, profiled, read_trace, window_steps


def _plane(name: str, lines: list[tuple[str, int, list[tuple[str, int, int]]]]) -> NS:
    """A plane shaped like an XPlane: lines of (name, timestamp_ns, [(event, offset_ns, dur_ns)])."""
    meta: dict[int, NS] = {}
    out = []
    for line, ts, events in lines:
        evs = []
        for event, offset, duration in events:
            mid = next((k for k, v in meta.items() if v.name == event), len(meta) + 1)
            meta[mid] = NS(name=event)
            evs.append(NS(metadata_id=mid, offset_ps=offset * 1000, duration_ps=duration * 1000))
        out.append(NS(name=line, timestamp_ns=ts, events=evs))
    return NS(name=name, lines=out, event_metadata=meta)


def test_gpu_kernels_collectives_input_waits_and_the_window_are_read() -> None:
    space = NS(
        planes=[
            _plane(
                "/host:CPU",
                [
                    ("python", 1000, [(MARK, 0, 100)]),
                    ("tf_Compute", 1000, [("IteratorGetNextOp::DoCompute", 60, 20), ("MatMul", 0, 5)]),
                ],
            ),
            _plane(
                "/device:GPU:0",
                [
                    ("Stream #7(Compute)", 1010, [("volta_sgemm_128x64", 0, 30)]),
                    ("Stream #9", 1000, [("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 30, 20)]),
                    ("XLA Ops", 1000, [("fusion.1", 0, 100)]),  # a summary line: not activity
                ],
            ),
            _plane("/device:GPU:1", []),  # nothing recorded there
        ]
    )
    trace = read_trace(space)
    assert trace.window == (1000, 1100)
    assert list(trace.gpus) == ["/device:GPU:0"]
    assert trace.gpus["/device:GPU:0"].busy == [(1010, 1040)]
    assert trace.gpus["/device:GPU:0"].collectives == [(1030, 1050)]
    assert trace.input_waits == [(1060, 1080)]
    s = split(trace)
    assert s is not None and (s.device_ns, s.collective_ns, s.input_ns, s.host_ns) == (30, 10, 20, 40)


def test_a_profile_without_its_window_mark_is_an_error() -> None:
    with pytest.raises(ValueError, match=MARK):
        read_trace(NS(planes=[_plane("/host:CPU", [("python", 0, [("other", 0, 5)])])]))


def test_the_window_is_whole_calls_of_about_its_length() -> None:
    assert window_steps(0.001, 1) == 300
    assert window_steps(0.001, 100) == 300
    assert window_steps(0.001, 1000) == 1000  # at least one call
    assert window_steps(2.0, 1) == 1


@pytest.mark.tf
def test_the_real_profiler_marks_the_window_and_records_input_waits_on_a_cpu() -> None:
    import tensorflow as tf

    it = iter(tf.data.Dataset.from_tensors(tf.ones([8, 4])).repeat())
    w = tf.Variable(tf.ones([4, 1]))

    @tf.function
    def step() -> tf.Tensor:
        return w.assign_add(tf.matmul(next(it), w)[:4] * 0.0)

    step()
    trace = profiled(lambda: [step() for _ in range(20)][-1].numpy())
    assert trace.window[1] > trace.window[0]
    assert trace.gpus == {}  # no GPU here
    assert trace.input_waits and all(trace.window[0] <= s <= trace.window[1] for s, _ in trace.input_waits)

    trainer = NS(updates=[0])

    def windows(steps: int, n: int) -> None:
        for _ in range(steps):
            step()
        trainer.updates[0] += steps

    trainer.windows = windows
    with pytest.raises(NoDeviceTrace, match="no GPU activity"):
        measure_profile(NS(trainer=trainer), NS(steps_per_execution=1), step_s=0.01)
