"""A local run in turns, spending a budget (docs/explanation/measurement.md, "A ratio: processes
taking turns"): every group (headline groups first: :func:`plan_groups`) gets ``protocol.processes``
instances (:func:`harness.launch.instances.turns.run_instance`), then the budget goes one instance
at a time to :meth:`TurnsRun.next`. A race split over groups stops its first stage at
``RACE_SHARE`` of the budget (:func:`harness.launch.sweep.group_run.race_plan`). A member that fails
or is invalid leaves its group; a group dropped :data:`MAX_DROPS` times stops."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import signal
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace

from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import Status
from harness.formulas import turns as tstats
from harness.formulas.breakdown import measurable
from harness.formulas.budget import Budget
from harness.launch.cells.progress import Progress
from harness.launch.cells.runner import CellEnd, Launcher, RunResult, RunState
from harness.launch.instances import resume
from harness.launch.instances.breakdowns import Apart, measure_apart, not_measured
from harness.launch.instances.turns import Instance, Plan, run_instance
from harness.launch.sweep.group_run import GroupRun, _why, race_plan
from harness.launch.sweep.limits import CLOSE_S, HEADLINE_SHARE, PRIORS, RACE_SHARE, asked_s, prior_instance_s
from harness.launch.sweep.run_params import NEW_RUN, REAL, Hooks, Identity, Output, Work
from harness.launch.system import xla_cache
from harness.launch.system.platform import available_memory_bytes
from harness.launch.system.process import worker_env
from harness.results.cost import RunCost
from harness.results.journal import Journal
from harness.results.ratios import Evidence
from harness.spec import words
from harness.spec.cell import Cell
from harness.spec.frameworks import overlapping
from harness.spec.groups import (
    PROCESS_BYTES,
    Group,
    Relation,
    default_max_live,
    groups,
    headline_groups,
    split_race,
)
from harness.spec.protocol import BUSY_MIN_BLOCKS, BUSY_SHARE, Protocol

MAX_DROPS = 3
"""Dropped instances (no member to blame: a deadline, a lost channel) after which a group stops."""


def max_live(protocol: Protocol) -> int:
    """``--max-live``, or the default from the machine's available memory."""
    if protocol.max_live:
        return protocol.max_live
    return default_max_live(available_memory_bytes() or 4 * PROCESS_BYTES)


def _title(group: Group) -> str:
    """A group on the progress line, e.g. ``cnn: 7 configurations raced (h0)``."""
    models = ", ".join(dict.fromkeys(str(m.cell.model) for m in group.members))
    return f"{models}: {len(group.members)} configurations{' raced' if group.race else ''} ({group.name})"


class MachineBusy(Exception):
    """Another program disturbed more than the protocol's share of the run's blocks: the run stops."""


OUT_OF_MEMORY = ("ResourceExhausted", "OOM when allocating", "out of memory", "CUDA_ERROR_OUT_OF_MEMORY")
"""What a worker's failure says when its device's memory ran out (TensorFlow's allocator, CUDA)."""


def _culprits(instance: Instance) -> dict[str, CellEnd]:
    """The member whose own failure ended a dropped instance, with its end (empty: none to blame)."""
    key = instance.culprit
    if key is None or key not in instance.ends:
        return {}
    return {key: instance.ends[key]}


class TurnsRun:
    """The state of one run in turns: its rows and files (:class:`RunState`), each group's instances,
    the step breakdowns, the budget's clock."""

    def __init__(
        self,
        run: RunState,
        options: WorkerOptions,
        launcher: Launcher,
        clock: Callable[[], float],
        journal: Journal | None = None,
        contenders: Collection[str] = (),
    ) -> None:
        self.run, self.options, self.launcher, self.clock = run, options, launcher, clock
        self.journal, self.contenders = journal, contenders
        # no step breakdown inside an instance: it comes after the turns, in a process of its own
        self.member_options = replace(options, settings=replace(options.settings, breakdown=False))
        live = max_live(run.protocol)
        self.groups = [GroupRun(g) for g in plan_groups(run.runnable, contenders, live)]
        races = [g.group for g in self.groups if g.group.race]
        self.staged = split_race(run.runnable, contenders, races, live)
        """Some model's race did not fit one group: a second stage races its leader against the rest."""
        self.plan = Plan.of(run.protocol, options.startup_timeout_s)
        self.prior = PRIORS[run.platform.device_kind]
        self._named_cache: tuple[tuple[int, ...], set[str]] = ((), set())
        self.steps: dict[str, int] = {}
        """By turn key: the window steps its first completed instance calibrated, reused later."""
        self.unmeasured: list[Evidence] = []
        """Comparisons not measured in turns (a member failed, or the group was split up)."""
        self.instances_of: dict[str, int] = {}
        self.cost = RunCost()
        self.blocks = self.busy_blocks = 0
        """Blocks measured so far, and of them those another program disturbed (:meth:`check_busy`)."""
        self.current: float | None = None
        """When the instance under way started (None between instances)."""
        self.ending = False
        """No instance that is due fits any more (set after each instance for the progress bar's ETA)."""
        self.closing = False
        """The instances are over: the step breakdowns (or the closing peak) began."""
        self.raced = False
        """The second stage began (:meth:`start_races`)."""
        self.t0 = clock()

    def note(self, kind: str, **fields: object) -> None:
        """Journal an entry (:mod:`harness.launch.instances.resume`) with the run's seconds spent so far."""
        if self.journal is not None:
            self.journal.append({"kind": kind, "elapsed_s": self.clock() - self.t0, **fields})

    def to_break_down(self) -> list[Cell]:
        """The cells whose step breakdown is still to be timed after the turns: every cell measured ok
        so far (``protocol.breakdown``) or those the answer names (``protocol.breakdown_named``:
        :meth:`named`), whose parts can be isolated (:func:`harness.formulas.breakdown.measurable`)."""
        protocol = self.run.protocol
        named = self._named_now() if protocol.breakdown_named else set()
        return [
            c
            for c in self.run.runnable
            if (protocol.breakdown or c.id in named)
            and c.id not in self.run.breakdowns
            and self.run.evidence[c.id]
            and self.run.ok_so_far(c)
            and measurable(c)
        ]

    def breakdowns_due(self) -> int:
        """Step breakdown processes the run's end will start, as known now (with
        ``protocol.breakdown_named``, at least two per headline group not yet broken down)."""
        due = len(self.to_break_down())
        if self.run.protocol.breakdown_named:
            races = sum(1 for g in self.groups if g.group.race)
            due = max(due, 2 * races - len(self.run.breakdowns))
        return due

    def breakdown_s(self) -> float:
        """Seconds of one step breakdown process: the run's own so far, else the prior."""
        found = self.cost.breakdown_process_s()
        return self.prior.breakdown_s if found is None else found

    def _named_now(self) -> set[str]:
        """:meth:`named`, computed again only when a group's instances changed (the progress bar's
        ETA asks many times a second)."""
        key = tuple(g.instances for g in self.groups)
        if self._named_cache[0] != key:
            self._named_cache = (key, self.named())
        return self._named_cache[1]

    def named(self) -> set[str]:
        """The cells the answer names so far: each race group's leader and closest rival (highest mean
        instance log ratio against it), once the group has its minimum instances."""
        out: set[str] = set()
        for g in self.groups:
            if g.instances < self.run.protocol.processes:
                continue
            raced = [(c, logs) for c, logs, _ in g.race() if logs]
            if raced:
                closest = max(raced, key=lambda found: sum(found[1]) / len(found[1]))[0]
                out |= {closest.reference, closest.subject}
        return out

    def keep(self, apart: Apart) -> None:
        """Keep a cell's step breakdown measured after the turns (or why it was not)."""
        self.run.breakdowns[apart.cell_id] = apart.breakdown
        if apart.seconds:
            self.cost.breakdown_s.append(apart.seconds)

    def _record(self, cell: Cell, end: CellEnd) -> None:
        k = self.instances_of.get(cell.id, 0)
        self.instances_of[cell.id] = k + 1
        self.run.record(end, k)

    def budget(self, kept_s: float = 0.0, share: float = 1.0) -> Budget:
        """The budget now, keeping the run's end (:meth:`_end_s`) and ``kept_s`` more seconds, for
        work that may take ``share`` of it."""
        return Budget(self.run.protocol.budget_s, self.clock() - self.t0, self._end_s() + kept_s, share)

    def next(self, share: float = 1.0) -> int | None:
        """The group that gets the next instance (:func:`tstats.next_group`: the races first within
        :data:`HEADLINE_SHARE` of the stage), or None when the stage is over. A minimum instance may
        take the budget up to the run's end, any other ``share`` of it less the breakdowns due and
        the run's end; a group whose next instance does not fit counts as at its most instances."""
        protocol, mine, end = self.run.protocol, self.groups, self.budget()
        stage = self.budget(self.breakdowns_due() * self.breakdown_s(), share)
        # the headline groups and the second stage's (their comparisons against the model's leader)
        fastest = [any(c.relation == Relation.FASTEST for c in g.group.comparisons) for g in mine]
        heads = {i for i, g in enumerate(mine) if g.group.race or fastest[i]}
        states = [g.state() for g in mine]
        first_while_open = stage.spent_s < HEADLINE_SHARE * stage.until_s
        pick = functools.partial(tstats.next_group, first=heads, first_while_open=first_while_open)
        while (
            found := pick(states, protocol.processes, protocol.max_processes, protocol.min_effect)
        ) is not None:
            g = mine[found]
            if (end if g.instances < protocol.processes else stage).fits(self.estimate_s(g)):
                return found
            states[found] = replace(states[found], instances=protocol.max_processes)
        return None

    def estimate_s(self, g: GroupRun) -> float:
        """Seconds of ``g``'s next instance: its own mean, else the run's (:meth:`RunCost.instance_s`),
        else :func:`prior_instance_s`."""
        if g.instances:
            return g.per_s
        found = self.cost.instance_s(len(g.group.members), asked_s(g.group, self.plan))
        return found if found is not None else prior_instance_s(g.group, self.plan, self.prior)

    def _end_s(self) -> float:
        """The closing peak process (as long as the first took) and :data:`CLOSE_S` for rows,
        costs and the report."""
        if not self.run.protocol.peak:
            return CLOSE_S
        processes = self.run.result.time.peak_processes if self.run.result.time is not None else 0
        return CLOSE_S + (self.run.peaks.seconds / processes if processes else self.prior.peak_s)

    def seconds_left(self) -> float | None:
        """The run's seconds left (the progress's ETA): the budget's less the breakdowns due and the
        run's end (none once no due instance fits), at most the groups' remaining instances, at least
        their remaining minimum ones (less what the current one has run), plus the breakdowns due and
        the closing peak; None before the first instance ends."""
        if self.cost.instance_s(1) is None:
            return None
        protocol, due = self.run.protocol, self.breakdowns_due() * self.breakdown_s()
        running = 0.0 if self.current is None else self.clock() - self.current

        def left(instances: int) -> float:
            more = [(0 if g.stopped else max(instances - g.instances, 0), g.group) for g in self.groups]
            each = self.cost.instance_s
            total = sum(n * (each(len(gr.members), asked_s(gr, self.plan)) or 0.0) for n, gr in more if n)
            return max(total - running, 0.0)

        # no instance that is due fits: the run ends now
        budget = 0.0 if self.current is None and self.ending else max(self.budget(due).left_s, 0.0)
        seconds = min(max(left(protocol.processes), min(budget, left(protocol.max_processes))), budget)
        assert self.run.result.time is not None
        ending = self.run.peaks.seconds / max(self.run.result.time.peak_processes, 1)
        return seconds + ending + due

    def start_races(self) -> None:
        """The second stage's groups (:func:`race_plan`) appended where a race did not fit one group."""
        if self.staged:
            found = race_plan(self.run, self.groups, self.contenders, max_live(self.run.protocol))
            self.groups += [GroupRun(g) for g in found]
        self.raced = True

    def measure(self, index: int, progress: Progress) -> None:
        """One instance of group ``index``, journaled, then kept (:meth:`apply`)."""
        g = self.groups[index]
        progress.show(f"{_title(g.group)}, round {g.instances + 1}")
        self.current = self.clock()
        try:
            number, prefix = g.instances + g.dropped, f"{g.group.name}-"
            instance = run_instance(
                g.group, number, self.plan, lambda _: self.member_options, self.launcher, prefix, self.steps
            )
        finally:
            self.current = None
        self.note("instance", instance=resume.encode_instance(instance))
        self.apply(index, instance, progress)
        self.check_busy(instance)

    def check_busy(self, instance: Instance) -> None:
        """Count the instance's blocks; MachineBusy once another program (or the hypervisor) disturbed
        more than :data:`BUSY_SHARE` of the run's blocks (after the first :data:`BUSY_MIN_BLOCKS`), unless
        the protocol's ``busy_ok``."""
        ids = {t.block for t in instance.turns}
        self.blocks += len(ids)
        self.busy_blocks += len({t.block for t in instance.turns if tstats.by_other_program(t)})
        share = 1.0 if self.run.protocol.busy_ok else BUSY_SHARE
        if self.blocks >= BUSY_MIN_BLOCKS and self.busy_blocks > share * self.blocks:
            name, cpus = tstats.busiest_other(instance.turns)
            who = f"{name} used {cpus:.2f} CPUs in the disturbed turns" if name else "no program was named"
            raise MachineBusy(
                f"the machine is busy: another program took CPU in {self.busy_blocks} of the "
                f"{self.blocks} blocks measured so far ({who}); the ratios would rest on what is "
                f"left. Stop it, then: python -m harness run --resume {self.run.result.run_id} "
                f"--results {self.run.files.root} (or run with --busy-ok to measure beside it)"
            )

    def apply(self, index: int, instance: Instance, progress: Progress | None = None) -> None:
        """Keep one instance of group ``index`` (measured now, or journaled): processes, ratios, costs."""
        g = self.groups[index]

        def say(label: str, status: str) -> None:
            """The instance on the progress line, its ETA knowing whether another one fits."""
            if progress is not None:
                self.ending = self.next() is None
                progress.advance(label, status)

        timed = sum(t.seconds for t in instance.turns if not overlapping(t.member))
        members, asked = len(g.group.members), asked_s(g.group, self.plan)
        self.cost.add(instance.phases, timed, instance.processes, not instance.dropped, members, asked)
        if instance.dropped:
            culprits = _culprits(instance)
            oom = [e.reason for e in culprits.values() if any(text in e.reason for text in OUT_OF_MEMORY)]
            if len(g.group.members) > 1 and oom:
                self.sequential(index, oom[0])
                say(f"{_title(g.group)}: do not fit in memory together; measured one by one", "")
                return
            for key, end in culprits.items():
                if end.event == Event.RECORD and end.row is not None and end.row.status == Status.OK:
                    # it passed a deadline
                    end = replace(end, event=Event.FAILED, reason=instance.dropped)
                elif instance.dropped not in end.reason:  # the coordinator's words, then the worker's
                    end = replace(end, reason=f"{instance.dropped}; {end.reason}")
                self._record(g.group.member(key).cell, end)
            g.dropped += 0 if culprits else 1
            self.unmeasured += g.without(set(culprits))
            if g.dropped >= MAX_DROPS:
                g.stopped = f"{g.dropped} instances dropped: {instance.dropped}"
            say(f"{_title(g.group)}, round dropped: {instance.dropped}", "")
            return
        for m in g.group.members:
            self._record(m.cell, instance.ends[m.key])
        self.steps.update({k: n for k, n in instance.steps.items() if n > 0 and k not in self.steps})
        g.add(instance)
        self.unmeasured += g.without({m.key for m in g.group.members if not self.run.ok_so_far(m.cell)})
        bad, blocks = tstats.disturbed_blocks(instance.turns), len({t.block for t in instance.turns})
        disturbed = f", {bad} of {blocks} blocks disturbed{_why(instance.turns)}" if bad else ""
        if disturbed and progress is not None and progress.tty:  # the bar's line is overwritten
            progress.warn(f"warning: {_title(g.group)}, round {g.instances}{disturbed}")
        say(f"{_title(g.group)}, round {g.instances}", f"{instance.wall_s:.0f} s{disturbed}")

    def sequential(self, index: int, reason: str) -> None:
        """Group ``index``'s members did not fit in memory together: each gets a group of its own,
        and the group's comparisons are reported as not measured in turns."""
        g = self.groups[index]
        note = f"not measured in turns: the group's members did not fit in memory together ({reason[:200]})"
        self.unmeasured += [
            Evidence(c, g.group.name, (), (), 0.0, g.dropped + 1, note)
            for c in (*g.group.comparisons, *(c for c, _, _ in g.race()))
        ]
        alone = [GroupRun(Group((m,), (), f"{g.group.name}.{i}")) for i, m in enumerate(g.group.members)]
        self.groups[index : index + 1] = alone

    def write_cost(self) -> None:
        """The run's costs row (where its wall time went), written and kept in words."""
        run, wall = self.run, self.clock() - self.t0
        self.cost.peak_s = run.peaks.seconds
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        fingerprint = (run.facts or {}).get("fingerprint")
        forked = any(r.row.ran.forked for e in run.evidence.values() for r in e)
        cost = self.cost.row(
            replace(run.run, timestamp=stamp), fingerprint, wall, run.protocol.budget_s, forked
        )
        run.files.write_cost(cost)
        run.result.paths.append(run.files.folder("costs"))
        run.result.cost = self.cost.text(wall)

    def measured(self) -> list[Evidence]:
        budget = self.run.protocol.budget_min
        return [m for g in self.groups for m in g.measured(budget)] + self.unmeasured


def plan_groups(runnable: Sequence[Cell], contenders: Collection[str], live: int) -> list[Group]:
    """The run's groups: the headline groups of ``contenders`` (:func:`headline_groups`), then
    those that measure every other comparison (:func:`groups`)."""
    heads = headline_groups(runnable, contenders, live)
    return heads + groups(runnable, live, heads)


def replay(state: TurnsRun, resumed: resume.Resumed) -> None:
    """A resumed run's state rebuilt from its journal (instances, their windows rewritten, peaks,
    stages, breakdowns), its budget's clock set to the seconds already spent."""
    cells = {c.id: c for c in state.run.runnable}
    for entry in resumed.entries:
        if entry["kind"] == "instance":
            index = next(i for i, g in enumerate(state.groups) if g.group.name == entry["instance"]["group"])
            state.apply(index, resume.decode_instance(entry["instance"], state.groups[index].group, cells))
        elif entry["kind"] == "peak":
            resume.restore_peak(state.run.peaks, entry)
            assert state.run.result.time is not None
            state.run.result.time.peak_processes += 1
        elif entry["kind"] == "races":
            state.start_races()
        elif entry["kind"] == "breakdown":
            state.keep(resume.decode_apart(entry["apart"]))
            state.closing = True
        elif entry["kind"] == "end":
            state.closing = True
    state.t0 = state.clock() - resumed.elapsed_s


def run_in_turns(work: Work, output: Output, identity: Identity = NEW_RUN, hooks: Hooks = REAL) -> RunResult:
    """Measure every runnable cell of ``work`` in group instances under its budget; write every row
    and the ratios under ``output.results``, journaling each instance, peak and stage as it ends.
    ``identity``: a new run, or a killed one whose journaled instances are kept."""
    protocol, resumed = work.protocol, identity.resumed
    run = RunState(
        list(work.cells),
        protocol,
        work.platform,
        output.results,
        hooks.peaks,
        identity.run_id,
        resumed.resumes + 1 if resumed else 0,
        work.machine,
    )
    logs = output.results / "logs" / run.files.date / run.result.run_id
    cache = xla_cache.env(run.runnable, logs / "xla-cache")
    options = WorkerOptions.of(protocol, work.platform, logs, work.mnist_path, env=cache)
    state = TurnsRun(run, options, hooks.launcher, hooks.clock, output.journal, work.contenders)
    if identity.started is not None:
        state.t0 = identity.started
    if resumed is not None:
        replay(state, resumed)
        state.note("resumed")
    progress = hooks.progress or Progress(0)
    progress.under_budget(protocol.budget_s, lambda: state.clock() - state.t0)
    progress.done = sum(g.instances + g.dropped for g in state.groups)
    progress.estimate = progress.estimate or state.seconds_left
    try:
        if run.runnable and not run.peaks.samples and not run.peaks.failures:
            measure_peak(state)
        if not state.closing and not state.raced:  # the first stage, then the races
            while (index := state.next(RACE_SHARE if state.staged else 1.0)) is not None:
                state.measure(index, progress)
            state.start_races()
            state.note("races")
        while not state.closing and (index := state.next()) is not None:
            state.measure(index, progress)
        break_down(state, progress)
        if resumed is None or not resumed.ended:
            close_peak(state)
            state.note("end")
    except KeyboardInterrupt:
        run.result.interrupted = True
    except MachineBusy as busy:
        run.result.interrupted = True
        run.result.stopped = str(busy)
    finally:
        progress.close()
        with held_signals() as caught:  # a Ctrl-C now ends the run after its rows, not amid them
            run.write_rows(state.measured())
            state.write_cost()
        run.result.interrupted |= bool(caught)
    return run.result


@contextlib.contextmanager
def held_signals() -> Iterator[list[int]]:
    """SIGINT and SIGTERM recorded (in the list it yields) instead of acted on, on the main thread."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    kept = {s: signal.signal(s, lambda n, _: caught.append(n)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)


def break_down(state: TurnsRun, progress: Progress) -> None:
    """The step breakdowns after the turns, one journaled process per cell
    (:meth:`TurnsRun.to_break_down`); one that no longer fits the budget is not started, its row says so."""
    state.closing = True
    for i, cell in enumerate(state.to_break_down()):
        label = f"{cell.model}: step breakdown of {words.describe(cell.to_dict())}"
        if not state.budget().fits(state.breakdown_s()):
            apart = Apart(cell.id, not_measured("the budget was spent before its process"), 0.0)
        else:
            progress.show(label)
            apart = measure_apart(cell, state.options, state.launcher, f"b{i}-")
        state.keep(apart)
        state.note("breakdown", apart=resume.encode_apart(apart))
        progress.advance(label, f"{apart.seconds:.0f} s")


def close_peak(state: TurnsRun) -> None:
    """The closing peak process, then more while a peak's CI is wider than ±5% and another fits
    (:meth:`harness.launch.cells.peak.PeakLog.close`)."""
    measure_peak(state)
    budget_s = state.run.protocol.budget_s
    state.run.peaks.close(
        lambda: measure_peak(state), lambda: Budget(budget_s, state.clock() - state.t0, CLOSE_S).left_s
    )


def measure_peak(state: TurnsRun) -> None:
    """One peak process, journaled, in the workers' environment (forked from their fork server)."""
    state.run.measure_peak(worker_env(state.options, state.options.log_dir))
    if state.run.peaks.dtypes:
        state.note("peak", **resume.peak_entry(state.run.peaks))
