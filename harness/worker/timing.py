"""The warm-up / calibrate / window / repeat protocol, around a loop's ``run`` and ``windows``
(:class:`harness.worker.training.loops.Trainer`)."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.contract.job import WorkerSettings
from harness.contract.turns import Do, Grant
from harness.spec.training import same_updates
from harness.worker.turns import TurnClient

Meter = Callable[[], float | None]
"""A cumulative energy counter of the cell's devices, joules (None: unreadable):
:func:`harness.worker.energy.cell_energy_meter`."""


@dataclass(frozen=True)
class Metered:
    """Energy over the windows it was read around: ``joules`` over ``seconds`` of windows that ran
    ``updates`` optimizer updates."""

    joules: float
    seconds: float
    updates: int


def metered(
    readings: list[tuple[float | None, float | None]], seconds: float, updates: int
) -> Metered | None:
    """:class:`Metered` of (before, after) counter readings around each metered window; None when
    any reading is missing or there is none."""
    if not readings or any(a is None or b is None for a, b in readings):
        return None
    return Metered(sum(b - a for a, b in readings if a is not None and b is not None), seconds, updates)


@dataclass(frozen=True)
class Timings:
    """Raw timings of one cell. Seconds throughout; steps are optimizer updates.

    ``window_starts``: each timed window's start on ``clock`` (``time.perf_counter``: the host's
    monotonic clock, comparable between processes of one host)."""

    compile_s: float
    window_steps: int
    window_seconds: tuple[float, ...]
    final_loss: float
    window_starts: tuple[float, ...] = ()
    target_s: float | None = None
    """The window length asked for (s), where it is not the protocol's ``window_s`` (turns)."""
    energy: Metered | None = None
    """Energy over the timed windows only (in turns: each of this process's own window turns,
    while the others wait; back to back: the warm-up and timed windows); None without a counter."""
    seed_loss: float | None = None
    """The loss of update ``same_updates(steps_per_execution)`` from the seed (:func:`first_call`)."""


def calibrated_window_steps(step_seconds: float, steps_per_execution: int, settings: WorkerSettings) -> int:
    """Steps per window so that a window lasts about ``settings.window_s``: a multiple of
    steps_per_execution and at least ``settings.min_window_steps``."""
    wanted = max(settings.min_window_steps, settings.window_s / max(step_seconds, 1e-9))
    return int(math.ceil(wanted / steps_per_execution) * steps_per_execution)


def calibrate(
    windows: Callable[[int, int], tuple[list[float], float]],
    steps_per_execution: int,
    settings: WorkerSettings,
    agree: Callable[[int], int] = lambda steps: steps,
) -> int:
    """Steps per window for ``settings.window_s``: two probe windows of ``min_window_steps`` (the
    step time from the second: no set-up cost left in it); ``agree`` gives every worker of a
    cluster the chief's length."""
    spe = steps_per_execution
    probe = spe * max(1, math.ceil(settings.min_window_steps / spe))
    probe_seconds, _ = windows(probe, 2)
    return agree(calibrated_window_steps(probe_seconds[-1] / probe, spe, settings))


def first_call(run: Callable[[int], float], spe: int, clock: Callable[[], float]) -> tuple[float, float]:
    """The first call's seconds (``compile_s``: tracing, compiling and its ``spe`` updates) and the
    loss of update :func:`~harness.spec.training.same_updates` (``spe``) from the seed, the updates
    past the first call's trained right after it, untimed."""
    t0 = clock()
    loss = run(spe)
    compile_s = clock() - t0
    rest = same_updates(spe) - spe
    return compile_s, run(rest) if rest else loss


def measure(
    run: Callable[[int], float],
    windows: Callable[[int, int], tuple[list[float], float]],
    steps_per_execution: int,
    settings: WorkerSettings,
    clock: Callable[[], float],
    agree: Callable[[int], int] = lambda steps: steps,
    ready: Callable[[], None] = lambda: None,
    meter: Meter = lambda: None,
) -> Timings:
    """Time a loop by the protocol: the first call (compile_s) and the seed loss's updates
    (:func:`first_call`), ``ready`` (co-tenants wait there for each other, so they calibrate and
    time together), two calibration windows (the step time comes from the second; ``agree`` makes
    every worker of a cluster use the chief's length), then ``warmup_windows`` untimed and
    ``repeats`` timed windows."""
    spe = steps_per_execution
    compile_s, seed_loss = first_call(run, spe, clock)
    ready()

    steps = calibrate(windows, spe, settings, agree)

    t0, before = clock(), meter()
    seconds, loss = windows(steps, settings.warmup_windows + settings.repeats)
    energy = metered([(before, meter())], sum(seconds), steps * len(seconds))
    starts = [t0 + sum(seconds[:i]) for i in range(len(seconds))]  # back to back
    skip = settings.warmup_windows
    return Timings(
        compile_s, steps, tuple(seconds[skip:]), loss, tuple(starts[skip:]), None, energy, seed_loss
    )


Stream = Callable[[int, Callable[[], bool], Callable[[float, float], None]], None]
"""``stream(steps, begin, end)``: windows of ``steps`` updates one after another inside one running
loop (Keras ``fit``): each starts when ``begin()`` returns True (it blocks until then; False ends
the loop) and is reported with ``end(seconds, loss)`` (:attr:`harness.worker.training.loops.Trainer.stream`)."""


def measure_in_turns(
    run: Callable[[int], float],
    windows: Callable[[int, int], tuple[list[float], float]],
    steps_per_execution: int,
    settings: WorkerSettings,
    clock: Callable[[], float],
    client: TurnClient,
    agree: Callable[[int], int] = lambda steps: steps,
    after_windows: Callable[[], None] = lambda: None,
    stream: Stream | None = None,
    meter: Meter = lambda: None,
) -> Timings:
    """Time a loop in turns (:mod:`harness.contract.turns`): the first call (compile_s; untimed, the
    other members may be compiling too) and the seed loss's updates, hello, then what the coordinator
    grants, each with the whole machine: a calibration turn (:meth:`_Turns.calibrate`), timed window
    turns, and the finishing turn, at whose grant this returns (the caller checks and replies).
    ``after_windows``: called after each timed window and the warm-up. With ``stream`` (a loop costly
    to set up: ``fit``) the window turns are served inside one running loop waiting for each grant
    between two windows (one untimed window in the first turn, then one timed per turn). ``meter``
    is read around each timed window: energy covers this process's own turns only."""
    spe = steps_per_execution
    compile_s, seed_loss = first_call(run, spe, clock)
    client.hello()
    turns = _Turns(client, windows, clock, meter, after_windows)
    steps, target = 0, None
    grant: Grant | None = None
    while True:
        grant = grant or client.grant()
        if grant["do"] == Do.CALIBRATE:
            target = grant["window_s"]
            steps = turns.calibrate(grant, spe, settings, agree)
            grant = None
        elif grant["do"] == Do.WINDOW and stream is not None:
            grant = turns.serve(stream, steps, grant)
        elif grant["do"] == Do.WINDOW:
            turns.begin(grant)
            (took,), last = windows(steps, 1)
            turns.end(took, last)
            grant = None
        else:
            seconds, starts = tuple(turns.seconds), tuple(turns.starts)
            energy = metered(turns.readings, sum(seconds), steps * len(seconds))
            return Timings(compile_s, steps, seconds, turns.loss, starts, target, energy, seed_loss)


@dataclass
class _Turns:
    """This process's turns: its calibration, and its timed window turns so far (each one's start on
    ``clock``, seconds and energy readings around it, and the last loss), each replied to."""

    client: TurnClient
    windows: Callable[[int, int], tuple[list[float], float]]
    clock: Callable[[], float]
    meter: Meter
    after_windows: Callable[[], None]
    seconds: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    readings: list[tuple[float | None, float | None]] = field(default_factory=list)
    loss: float = float("nan")
    before: float | None = None
    cpu: float = 0.0

    def calibrate(self, grant: Grant, spe: int, settings: WorkerSettings, agree: Callable[[int], int]) -> int:
        """Steps per window for the granted seconds: an earlier instance's (``grant["steps"]``), else
        two windows of ``min_window_steps`` (:func:`calibrate`); then ``warmup_windows`` untimed ones."""
        known = int(grant.get("steps") or 0)
        wanted = dataclasses.replace(settings, window_s=grant["window_s"])
        steps = known or calibrate(self.windows, spe, wanted, agree)
        if settings.warmup_windows:
            self.windows(steps, settings.warmup_windows)
            self.after_windows()
        self.client.reply({"done": Do.CALIBRATE, "steps": steps})
        return steps

    def begin(self, grant: Grant | None = None) -> Grant | None:
        """A window's start at ``grant`` (the next one when None); the grant when it is not a window."""
        grant = grant or self.client.grant()
        if grant["do"] != Do.WINDOW:
            return grant
        self.before = self.meter()
        self.starts.append(self.clock())
        self.cpu = time.process_time()
        return None

    def end(self, took: float, last_loss: float) -> None:
        self.readings.append((self.before, self.meter()))
        self.after_windows()
        self.seconds.append(took)
        self.loss = last_loss
        self.client.reply({"done": Do.WINDOW, "seconds": took, "cpu_s": time.process_time() - self.cpu})

    def serve(self, stream: Stream, steps: int, grant: Grant) -> Grant:
        """Window turns served inside one running loop from ``grant`` (a window's) on; returns the
        grant that ended them (the finishing turn's)."""
        first: list[Grant] = [grant]
        final: list[Grant] = []

        def next_window() -> bool:
            other = self.begin(first.pop() if first else None)
            final.extend([other] if other else [])
            return other is None

        stream(steps, next_window, self.end)
        if not final:
            raise RuntimeError("the streamed loop ended before the finishing turn")
        return final[0]


def stopwatch(
    call: Callable[[int], object], clock: Callable[[], float] = time.perf_counter
) -> Callable[[int], float]:
    """``call(n)`` (n repetitions ending in a host sync) as a window returning its seconds."""

    def window(n: int) -> float:
        t0 = clock()
        call(n)
        return clock() - t0

    return window


def per_repetition(
    call: Callable[[int], None],
    window_s: float,
    agree: Callable[[int], int] = lambda n: n,
    clock: Callable[[], float] = time.perf_counter,
    windows: int = 3,
) -> tuple[float, int]:
    """(seconds per repetition, n) of ``call(n)`` (n repetitions, ending in a host sync): a first
    call (trace), a calibration call, then ``windows`` windows of n repetitions; the median window / n.
    ``agree``: every worker of a cluster uses the chief's n (collectives must match)."""
    timed = stopwatch(call, clock)
    call(1)
    probe = max(timed(2) / 2, 1e-7)
    n = agree(max(1, int(window_s / probe)))
    return statistics.median(timed(n) for _ in range(windows)) / n, n


@dataclass(frozen=True)
class Timed:
    """One thing to time in :func:`interleaved`: ``window(n)`` runs n repetitions (n a multiple of
    ``unit``), ending in a host sync, and returns the seconds they took."""

    window: Callable[[int], float]
    unit: int = 1
    warm: bool = False
    """Already traced and run (e.g. the cell's own training function): no tracing window, and a
    calibration window of one ``unit``."""


def interleaved(
    calls: dict[str, Timed],
    window_s: float,
    agree: Callable[[int], int] = lambda n: n,
    rounds: int = 5,
    again: Callable[[dict[str, float]], bool] = lambda figures: False,
    sets: int = 1,
) -> dict[str, float]:
    """Seconds per repetition of each call, every call timed under the same conditions. Each call is
    traced (one window of ``unit``) and calibrated (a window of 2 x ``unit``; a warm call: one of
    ``unit``, untraced) to windows of about ``window_s`` (s); then ``rounds`` rounds time one window of
    every call in turn (reversed every other round: a machine's drift affects every call alike). A
    figure is the median window / n; while ``again(figures)`` holds, ``rounds`` more rounds run (up to
    ``sets`` sets in all). ``agree``: every worker of a cluster uses the chief's n and decision."""
    counts: dict[str, int] = {}
    for name, c in calls.items():
        if not c.warm:
            c.window(c.unit)
        units = 1 if c.warm else 2
        probe = max(c.window(units * c.unit) / (units * c.unit), 1e-7)
        counts[name] = agree(c.unit * max(1, math.ceil(window_s / probe / c.unit)))
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    order, figures = list(calls), {}
    for done in range(1, max(1, sets) + 1):
        for r in range(rounds):
            for name in order if r % 2 == 0 else order[::-1]:
                seconds[name].append(calls[name].window(counts[name]) / counts[name])
        figures = {name: statistics.median(s) for name, s in seconds.items()}
        if done >= sets or not agree(int(again(figures))):
            break
    return figures
