"""Tests of harness.timing with a fake training callable and a fake clock (no real time)."""

from __future__ import annotations

import pytest

from harness.contract.job import WorkerSettings
from harness.spec.protocol import Protocol
from harness.worker.timing import Timings, calibrated_window_steps, measure
from harness.worker.training.loops import timed_windows

STEP_S = 0.001  # fake seconds per optimizer step
COMPILE_S = 0.5  # fake extra seconds of the first call (tracing)


def _settings(**fields: object) -> WorkerSettings:
    """A worker's settings from a protocol with ``fields``."""
    return WorkerSettings.of(Protocol(**fields))


class FakeTraining:
    """``run(steps) -> loss`` that advances a fake clock by steps * STEP_S (plus COMPILE_S once)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.calls: list[int] = []

    def clock(self) -> float:
        return self.now

    def run(self, steps: int) -> float:
        self.now += steps * STEP_S + (COMPILE_S if not self.calls else 0.0)
        self.calls.append(steps)
        return 1.0 / len(self.calls)  # loss falls call by call

    def windows(self, steps: int, n: int) -> tuple[list[float], float]:
        return timed_windows(self.run, steps, n, clock=self.clock)


def test_measure_with_fake_clock():
    fake = FakeTraining()
    protocol = _settings(repeats=4, window_s=0.05, warmup_windows=2, min_window_steps=10)
    t = measure(fake.run, fake.windows, 4, protocol, clock=fake.clock)
    assert isinstance(t, Timings)
    # first call: one steps_per_execution of steps plus tracing
    assert t.compile_s == pytest.approx(COMPILE_S + 4 * STEP_S)
    # 0.05 s / 0.001 s per step = 50 steps, rounded up to a multiple of 4
    assert t.window_steps == 52
    assert t.window_steps % 4 == 0 and t.window_steps >= protocol.min_window_steps
    assert len(t.window_seconds) == protocol.repeats
    assert t.window_seconds == pytest.approx((52 * STEP_S,) * 4)
    # calls: compile (4), the seed loss's other 4 (same_updates(4) = 8), two calibration probes
    # (12 = 4 * ceil(10 / 4)), 2 warm-up, 4 timed windows
    assert fake.calls == [4, 4, 12, 12, 52, 52, 52, 52, 52, 52]
    assert t.final_loss == 1.0 / len(fake.calls)
    assert t.seed_loss == 1.0 / 2  # the loss of update 8, after the untimed second call


def test_measure_respects_min_window_steps():
    fake = FakeTraining()
    # a 0.005 s window would be 5 steps: the minimum of 20 wins, rounded up to a multiple of 6
    protocol = _settings(repeats=2, window_s=0.005, warmup_windows=0, min_window_steps=20)
    t = measure(fake.run, fake.windows, 6, protocol, clock=fake.clock)
    assert t.window_steps == 24
    assert fake.calls == [6, 6, 24, 24, 24, 24]
    assert len(t.window_seconds) == 2
    assert t.final_loss == 1.0 / len(fake.calls)


def test_measure_window_length_near_target():
    fake = FakeTraining()
    protocol = _settings(repeats=3, window_s=1.0, warmup_windows=1, min_window_steps=10)
    t = measure(fake.run, fake.windows, 10, protocol, clock=fake.clock)
    assert t.window_steps == 1000
    for s in t.window_seconds:
        assert s == pytest.approx(protocol.window_s)


@pytest.mark.parametrize(
    "step_s,spe,window_s,min_steps,expected",
    [
        (0.01, 10, 1.0, 10, 100),  # 1.0 / 0.01 = 100, already a multiple of 10
        (0.003, 10, 1.0, 10, 340),  # 333.3 -> 340
        (0.003, 1, 1.0, 10, 334),  # 333.3 -> 334
        (0.5, 4, 1.0, 10, 12),  # 2 steps wanted, the minimum 10 rounds up to 12
        (0.25, 5, 1.0, 1, 5),  # 4 steps wanted, one execution of 5
        (0.002, 7, 0.1, 10, 56),  # 50 -> 56
        (0.0, 10, 1.0, 10, 1_000_000_000),  # a zero step time is clamped to 1e-9 s
    ],
)
def test_calibrated_window_steps(step_s, spe, window_s, min_steps, expected):
    protocol = _settings(window_s=window_s, min_window_steps=min_steps)
    steps = calibrated_window_steps(step_s, spe, protocol)
    assert steps == expected
    assert steps % spe == 0 and steps >= min_steps


def test_per_repetition_calibrates_then_takes_the_median_window():
    from harness.worker.timing import per_repetition

    now = [0.0]
    calls: list[int] = []

    def call(n: int) -> None:  # 2 ms per repetition, 10 ms extra on the first (trace) call
        calls.append(n)
        now[0] += 0.002 * n + (0.010 if len(calls) == 1 else 0.0)

    seconds, n = per_repetition(call, 0.1, clock=lambda: now[0], windows=3)
    assert calls == [1, 2, 50, 50, 50]  # trace, probe, three windows of 0.1 s / 2 ms
    assert n == 50 and seconds == pytest.approx(0.002)
    agreed, _ = per_repetition(call, 0.1, agree=lambda k: 10, clock=lambda: now[0])
    assert calls[-3:] == [10, 10, 10] and agreed == pytest.approx(0.002)


def test_interleaved_calibrates_each_call_then_alternates_them_round_by_round():
    from harness.worker.timing import Timed, interleaved

    order: list[tuple[str, int]] = []
    slow = [1.0]  # the machine slows down steadily: the alternating order spreads it evenly

    def timed(name: str, per_rep: float) -> Timed:
        def window(n: int) -> float:
            order.append((name, n))
            if len(order) > 4:  # after calibration
                slow[0] += 0.1
            return per_rep * n * slow[0]

        return Timed(window, unit=10 if name == "step" else 1)

    out = interleaved({"step": timed("step", 0.002), "part": timed("part", 0.001)}, 0.05, rounds=4)
    # trace (one unit), probe (two units), for each call: step 0.05 / 0.002 = 25 -> 30 (unit 10)
    assert order[:4] == [("step", 10), ("step", 20), ("part", 1), ("part", 2)]
    assert order[4:] == [
        ("step", 30),
        ("part", 50),
        ("part", 50),
        ("step", 30),
        ("step", 30),
        ("part", 50),
        ("part", 50),
        ("step", 30),
    ]
    # windows 1, 4, 5, 8 (step) and 2, 3, 6, 7 (part): both medians at a slowdown of 1.45
    assert out["part"] / out["step"] == pytest.approx(0.5)
    agreed = interleaved({"part": timed("part", 0.001)}, 0.05, agree=lambda n: 7, rounds=1)
    assert order[-1] == ("part", 7) and agreed["part"] > 0
    del order[:]
    slow[0] = 1.0
    warm = Timed(timed("step", 0.002).window, unit=10, warm=True)  # no tracing, a one-unit probe
    interleaved({"step": warm}, 0.05, rounds=1)
    assert order == [("step", 10), ("step", 30)]


def test_interleaved_runs_more_rounds_while_asked_and_pools_them():
    from harness.worker.timing import Timed, interleaved

    def fake(per_rep: list[float]) -> Timed:  # each window: its next per-repetition seconds
        left = iter(per_rep)
        return Timed(lambda n: next(left) * n)

    asked: list[dict[str, float]] = []

    def again(figures: dict[str, float]) -> bool:
        asked.append(figures)
        return figures["part"] > 2

    # trace and probe (1 s: n = 1), a set of 3 disturbed windows (median 3: again), then 3 more:
    # the median over all 6 is 2, so no more; the last windows are never run
    part = fake([1.0, 1.0, 3.0, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    out = interleaved({"part": part}, 1.0, rounds=3, again=again, sets=5)
    assert [f["part"] for f in asked] == [3.0, 2.0] and out == {"part": 2.0}
    capped = fake([1.0, 1.0, 3.0, 3.0])  # at most `sets` sets of rounds
    assert interleaved({"part": capped}, 1.0, rounds=1, again=lambda f: True, sets=2) == {"part": 3.0}


class FakeClient:
    """The worker's end of the turns channel, scripted: grants in order, replies kept."""

    def __init__(self, grants: list[dict[str, object]]) -> None:
        self.grants, self.replies, self.hellos = list(grants), [], 0

    def hello(self) -> None:
        self.hellos += 1

    def grant(self) -> dict[str, object]:
        return self.grants.pop(0)

    def reply(self, reply: dict[str, object]) -> None:
        self.replies.append(reply)


GRANTS = [
    {"do": "calibrate", "window_s": 0.05},
    *[{"do": "window", "block": b} for b in (0, 0, 1, 1)],
    {"do": "finish"},
]


@pytest.mark.parametrize("streamed", [False, True])
def test_turns_time_one_window_per_grant_called_or_streamed(streamed: bool) -> None:
    from harness.worker.timing import measure_in_turns

    fake = FakeTraining()
    protocol = _settings(warmup_windows=1, min_window_steps=10)
    streams: list[int] = []

    def stream(steps: int, begin, end) -> None:  # type: ignore[no-untyped-def]
        # one running loop: its first window untimed (the loop's set-up), then one per begin()
        fake.run(steps)
        streams.append(steps)
        while begin():
            t0 = fake.clock()
            loss = fake.run(steps)
            end(fake.clock() - t0, loss)

    client = FakeClient(GRANTS)
    t = measure_in_turns(
        fake.run,
        fake.windows,
        4,
        protocol,
        fake.clock,
        client,
        stream=stream if streamed else None,  # type: ignore[arg-type]
    )
    assert client.hellos == 1 and client.grants == []  # the finishing grant ended it
    assert t.window_steps == 52 and t.target_s == 0.05
    assert t.window_seconds == pytest.approx((52 * STEP_S,) * 4) and len(t.window_starts) == 4
    windows = [r for r in client.replies if r["done"] == "window"]
    assert [r["seconds"] for r in windows] == pytest.approx([52 * STEP_S] * 4)
    assert client.replies[0] == {"done": "calibrate", "steps": 52}
    # compile, two probes, one warm-up; then 4 windows called, or one stream: an untimed window, 4 timed
    assert fake.calls == [4, 4, 12, 12, 52, *([52] * (5 if streamed else 4))]
    assert t.seed_loss == 1.0 / 2
    assert streams == ([52] if streamed else [])
    assert t.final_loss == 1.0 / len(fake.calls)


def test_turns_reuse_the_steps_an_earlier_instance_calibrated() -> None:
    from harness.worker.timing import measure_in_turns

    fake = FakeTraining()
    grants = [{"do": "calibrate", "window_s": 0.05, "steps": 40}, *GRANTS[1:]]
    client = FakeClient(grants)
    t = measure_in_turns(
        fake.run, fake.windows, 4, _settings(warmup_windows=1, min_window_steps=10), fake.clock, client
    )
    assert client.replies[0] == {"done": "calibrate", "steps": 40} and t.window_steps == 40
    assert fake.calls == [4, 4, 40, *([40] * 4)]  # compile, seed loss, the warm-up, no probe; 4 windows


class BusyNeighbours(FakeClient):
    """Each grant comes after the other members' turns, which the package counter also counts."""

    def __init__(self, grants: list[dict[str, object]], counter: dict[str, float]) -> None:
        super().__init__(grants)
        self.counter = counter

    def grant(self) -> dict[str, object]:
        self.counter["j"] += 50.0  # the others' turns: 50 J between two of ours
        return super().grant()


@pytest.mark.parametrize("streamed", [False, True])
def test_energy_in_turns_counts_only_this_processs_own_windows(streamed: bool) -> None:
    """A package counter that also runs while the others take their turns: only the joules read
    around this process's own windows count, over the updates those windows ran."""
    from harness.worker.timing import measure_in_turns

    fake = FakeTraining()
    counter = {"j": 0.0}

    def run(steps: int) -> float:  # 10 W while this process trains
        counter["j"] += 10 * steps * STEP_S
        return fake.run(steps)

    def windows(steps: int, n: int) -> tuple[list[float], float]:
        return timed_windows(run, steps, n, clock=fake.clock)

    def stream(steps: int, begin, end) -> None:  # type: ignore[no-untyped-def]
        run(steps)
        while begin():
            t0 = fake.clock()
            loss = run(steps)
            end(fake.clock() - t0, loss)

    settings = _settings(warmup_windows=1, min_window_steps=10)
    client = BusyNeighbours(GRANTS, counter)
    t = measure_in_turns(
        run,
        windows,
        4,
        settings,
        fake.clock,
        client,
        stream=stream if streamed else None,  # type: ignore[arg-type]
        meter=lambda: counter["j"],
    )
    assert t.energy is not None and t.energy.updates == 4 * 52
    assert t.energy.seconds == pytest.approx(4 * 52 * STEP_S)
    assert t.energy.joules == pytest.approx(4 * 10 * 52 * STEP_S)  # none of the neighbours' 50 J
    assert counter["j"] > 6 * 50  # which the counter did count
    none = measure_in_turns(run, windows, 4, settings, fake.clock, FakeClient(GRANTS))
    assert none.energy is None


def test_metered_needs_every_reading() -> None:
    from harness.worker.timing import metered

    assert metered([(1.0, 3.0), (5.0, 6.0)], 2.0, 8).joules == 3.0  # type: ignore[union-attr]
    assert metered([(1.0, 3.0), (None, 6.0)], 2.0, 8) is None and metered([], 0.0, 0) is None


@pytest.mark.parametrize("spe, calls, loss", [(1, [1, 7], 0.5), (8, [8], 1.0), (10, [10], 1.0)])
def test_the_first_call_is_timed_alone_and_the_seed_loss_follows_it(
    spe: int, calls: list[int], loss: float
) -> None:
    """compile_s times only the first call; the seed loss is that of update same_updates(spe)."""
    from harness.worker.timing import first_call

    fake = FakeTraining()
    compile_s, seed_loss = first_call(fake.run, spe, fake.clock)
    assert compile_s == pytest.approx(COMPILE_S + spe * STEP_S)
    assert fake.calls == calls and seed_loss == loss
