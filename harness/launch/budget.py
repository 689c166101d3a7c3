"""A local run in turns, spending a budget: the cells are packed into groups
(:func:`harness.spec.groups.groups`: the cells each reported ratio compares, live together), every
group gets ``protocol.processes`` instances (:func:`harness.launch.turns.run_instance`), then the
budget (``protocol.budget_min``) goes, one instance at a time, to the group whose ratios are least
decided (:func:`harness.formulas.turns.next_group`), until all are decided, the groups reach
``protocol.max_processes`` instances or :data:`RACE_SHARE` of the budget is spent. Then the second
stage: each model's fastest configuration so far and those tied with it (separately measured, so
their difference is not yet decided) are raced in turns (:func:`race_plan`) with the rest of the
budget; with no tie, the first stage goes on instead.

With headline groups (:attr:`Group.race`: each model's contenders raced against the fastest of
them) there is one stage over the whole budget, and the headline gets the budget: every group
first gets its ``protocol.processes`` instances (the headline's first); past them, while a
headline group has an undecided comparison that more instances would likely decide (its
:func:`~harness.formulas.turns.instances_to_decide` less its instances so far, at least 1, is
within the group's instances left up to ``protocol.max_processes``), no other group gets an extra
instance, however much of the budget is spent; so does a headline scaling efficiency whose CI is
wider than :data:`SCALING_CI_WIDTH` of its value while the instances that would likely narrow it
to that (:func:`~harness.formulas.turns.instances_to_narrow`) are within the same bound. A
headline comparison that is open otherwise (undecided or too wide, but not likely settled by the
instances it may still get) puts its group first only until :data:`HEADLINE_SHARE` of
the budget is spent, so that a comparison no affordable number of instances would settle does not
take what the other groups' ratios need; after that it competes as the other groups do (the
widest open comparison first). The budget's time checks decide whether the chosen group's next
instance fits; one that does not fit has no instance left (it never would: the clock only moves
on), and the choice passes on to the others.

Every member's process is also one process of its cell (its figure: the median of its turn
windows), so each cell's absolute figure keeps the CI over processes (and history) of
:func:`harness.launch.runner.run_sweep`; its windows are stored as soon as its instance ends. A
member that fails or is invalid leaves its group (its row says why); an instance dropped for
another reason (a deadline) is counted, and a group dropped :data:`MAX_DROPS` times stops.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import Status
from harness.errors import HarnessError
from harness.formulas import stats
from harness.formulas import turns as tstats
from harness.formulas.breakdown import measurable
from harness.formulas.turns import Turn
from harness.launch import resume, xla_cache
from harness.launch.breakdowns import Apart, measure_apart, not_measured
from harness.launch.platform import available_memory_bytes
from harness.launch.process import worker_env
from harness.launch.progress import Progress
from harness.launch.run_params import NEW_RUN, REAL, Hooks, Identity, Output, Work
from harness.launch.runner import CellEnd, Launcher, RunResult, RunState
from harness.launch.turns import Instance, Plan, run_instance
from harness.results.cost import RunCost
from harness.results.journal import Journal
from harness.results.ratios import Measured
from harness.spec import words
from harness.spec.cell import Cell
from harness.spec.frameworks import NONE, overlapping
from harness.spec.groups import (
    PROCESS_BYTES,
    Comparison,
    Group,
    Member,
    Relation,
    default_max_live,
    groups,
    headline_groups,
    race_groups,
)
from harness.spec.models import ModelRef
from harness.spec.protocol import BUSY_MIN_BLOCKS, Protocol

RACE_SHARE = 0.7
"""The share of the budget the first stage may spend (past its minimum instances) before the
second stage races the configurations tied with each model's fastest; with no tie, the first
stage goes on to the whole budget."""

HEADLINE_SHARE = 0.85
"""The share of the budget during which a headline group (each model's contenders) with any open
comparison gets its extra instances before any other group's. One with an undecided comparison
that more instances would likely decide gets them first for the whole budget
(:func:`harness.formulas.turns.next_group`)."""

SCALING_CI_WIDTH = 0.10
"""The precision target of a headline group's scaling comparisons (Relation.SCALING in a race
group): the widest 95% CI, as a fraction of the efficiency's value ((high - low) / value =
2 sinh(h), about 2 h, for a half-width h on the log scale), at which it stops wanting instances;
wider, it stays open for the budget even when its verdict is decided (0.405 [0.374, 0.438] is
0.158 wide). Like any open comparison it takes at most ``protocol.max_processes`` instances."""

CLOSE_S = 15.0
"""Seconds the budget keeps for writing the rows and drawing the report (7 s for the default
sweep's report on 2 cores, 2026-11-26), besides the closing peak process."""


@dataclass(frozen=True)
class Prior:
    """What an instance costs before any has ended, on one kind of device; the run corrects it
    from its own instances as they end (:meth:`TurnsRun.estimate_s`)."""

    member_s: float
    """Seconds per member: start-up, calibration, checks, exit."""
    stretch: float
    """Wall seconds of the window turns per second of turns they ask for."""
    peak_s: float
    """Seconds of one peak process."""
    breakdown_s: float
    """Seconds of one step breakdown process (:mod:`harness.launch.breakdowns`)."""
    measured: str
    """Where the figures come from."""


PRIORS = {
    "cpu": Prior(
        1.5,
        1.5,
        5.0,
        6.5,
        "the default sweep's 48 instances on a 2-core VM, 2026-11-26: a member's start-up, "
        "calibration and checks median 1.2 s, up to 2.9 s; the turns took 1.3-2.4 x as long as they "
        "ask (a faster machine needs less); a step breakdown 4.8 s median (3.0-11.9 s, 23 in 5 "
        "runs' finishing turns) plus a member's start-up",
    ),
    "gpu": Prior(
        3.9,
        1.15,
        12.0,
        8.0,
        "the 9 runs on an H100 and an H200, 2026-11-26 (their costs tables): start-up, calibration "
        "and exit median 3.9 s a process (1.5 to 25 s), the turns 1.00-1.12 x as long as they ask, "
        "a peak process 7-14 s, a profiled step breakdown 3.9 s median (2.6-16 s, 11 finishing "
        "turns) plus a member's start-up",
    ),
}
"""The prior per device kind (:attr:`harness.spec.protocol.Platform.device_kind`)."""


MAX_DROPS = 3
"""Dropped instances (no member to blame: a deadline, a lost channel) after which a group stops."""


def max_live(protocol: Protocol) -> int:
    """``--max-live``, or the default from the machine's available memory."""
    if protocol.max_live:
        return protocol.max_live
    return default_max_live(available_memory_bytes() or 4 * PROCESS_BYTES)


@dataclass
class GroupRun:
    """One group's instances so far: the group (members leave it when they fail), each comparison's
    instance and block log ratios, wall seconds, dropped instances."""

    group: Group
    logs: dict[int, list[float]] = field(default_factory=dict)
    blocks: dict[int, list[tuple[float, ...]]] = field(default_factory=dict)
    instances: int = 0
    seconds: float = 0.0
    dropped: int = 0
    stopped: str = ""
    disturbed: int = 0
    """Blocks left out because another process (or the hypervisor) used the CPUs in a turn."""
    why: str = ""
    """Why the last instance with a disturbed block had it (:func:`_why`), "" before any."""
    turns: list[list[Turn]] = field(default_factory=list)
    """A race group's (:attr:`Group.race`) undisturbed turns, per completed instance."""

    def state(self) -> tstats.GroupState:
        """Where the group stands for the budget: its comparisons (then its race's) with their
        precision targets (:meth:`targets`); a stopped group has none and takes no instance."""
        per = self.seconds / self.instances if self.instances else 0.0
        if self.stopped:
            return tstats.GroupState(self.group.name, 10**9, per, ())
        raced = tuple(logs for _, logs, _ in self.race())
        comps = tuple(tuple(self.logs.get(i, ())) for i in range(len(self.group.comparisons))) + raced
        targets = self.targets() + (None,) * len(raced)
        return tstats.GroupState(self.group.name, self.instances, per, comps, targets)

    def targets(self) -> tuple[float | None, ...]:
        """Per comparison of the group (not its race's FASTEST ones, which have none) its precision
        target: :data:`SCALING_CI_WIDTH` for a race group's scaling comparisons, else None."""
        return tuple(
            SCALING_CI_WIDTH if self.group.race and c.relation == Relation.SCALING else None
            for c in self.group.comparisons
        )

    def leader(self) -> str | None:
        """A race group's fastest member so far: the highest mean instance log ratio against its
        first member (None before an undisturbed block, or when the group is no race)."""
        members = [m.key for m in self.group.members]
        if not self.group.race or not self.turns or len(members) < 2:
            return None

        def mean_log(key: str) -> float:
            if key == members[0]:
                return 0.0
            logs = [
                v for t in self.turns if math.isfinite(v := tstats.instance_log_ratio(t, key, members[0]))
            ]
            return sum(logs) / len(logs) if logs else -math.inf

        means = {key: mean_log(key) for key in members}
        if all(v == -math.inf for k, v in means.items() if k != members[0]):
            return None  # no undisturbed block yet: no member is known to be fastest
        return max(members, key=means.__getitem__)

    def race(self) -> list[tuple[Comparison, tuple[float, ...], tuple[tuple[float, ...], ...]]]:
        """A race group's comparisons of each member against its :meth:`leader` (Relation.FASTEST),
        with each instance's log ratio and block log ratios; before the leader is known, each
        against the first member with no evidence (their note says why); empty for another group."""
        if not self.group.race or len(self.group.members) < 2:
            return []
        lead = self.leader()
        if lead is None:
            head = self.group.members[0].key
            return [(Comparison(Relation.FASTEST, m.key, head), (), ()) for m in self.group.members[1:]]
        out = []
        for m in self.group.members:
            if m.key == lead:
                continue
            blocks = [tuple(tstats.block_log_ratios(t, m.key, lead)) for t in self.turns]
            kept = [b for b in blocks if b]
            logs = tuple(sum(b) / len(b) for b in kept)
            out.append((Comparison(Relation.FASTEST, m.key, lead), logs, tuple(kept)))
        return out

    def add(self, instance: Instance) -> None:
        """A completed instance: its undisturbed blocks' log ratios (:func:`tstats.clean`)."""
        self.instances += 1
        self.seconds += instance.wall_s
        disturbed = tstats.disturbed_blocks(instance.turns)
        self.disturbed += disturbed
        if disturbed:
            self.why = _why(instance.turns)
        turns = tstats.clean(instance.turns)
        if self.group.race:
            self.turns.append(turns)
        for i, c in enumerate(self.group.comparisons):
            blocks = tstats.block_log_ratios(turns, c.subject, c.reference)
            if blocks:
                self.logs.setdefault(i, []).append(sum(blocks) / len(blocks))
                self.blocks.setdefault(i, []).append(tuple(blocks))

    def without(self, keys: set[str]) -> list[Measured]:
        """The group without members ``keys`` (failed or invalid); returns their comparisons, as
        not measured in turns (the ratios table says why)."""
        gone = [
            Measured(
                c,
                self.group.name,
                (),
                (),
                0.0,
                self.dropped,
                f"not measured in turns: {k} failed or is invalid",
            )
            for c in self.group.comparisons
            for k in sorted({c.subject, c.reference} & keys)[:1]
        ]
        kept = [i for i, c in enumerate(self.group.comparisons) if not {c.subject, c.reference} & keys]
        self.logs = {n: self.logs[i] for n, i in enumerate(kept) if i in self.logs}
        self.blocks = {n: self.blocks[i] for n, i in enumerate(kept) if i in self.blocks}
        members = tuple(m for m in self.group.members if m.key not in keys)
        comps = tuple(self.group.comparisons[i] for i in kept)
        self.group = dataclasses.replace(self.group, members=members, comparisons=comps)
        if not members:
            self.stopped = "every member failed"
        return gone

    def measured(self, budget_min: float) -> list[Measured]:
        """Its comparisons as measured (a race group's against its fastest member last); a group
        the budget never reached says so in their note."""
        per = self.seconds / self.instances if self.instances else 0.0
        fixed = [
            Measured(
                c,
                self.group.name,
                tuple(self.logs.get(i, ())),
                tuple(self.blocks.get(i, ())),
                per,
                self.dropped,
                self._note(i, budget_min),
                disturbed_blocks=self.disturbed,
            )
            for i, c in enumerate(self.group.comparisons)
        ]
        raced = [
            Measured(
                c,
                self.group.name,
                logs,
                blocks,
                per,
                self.dropped,
                self._why_not(bool(logs), budget_min),
                disturbed_blocks=self.disturbed,
            )
            for c, logs, blocks in self.race()
        ]
        return fixed + raced

    def _note(self, comparison: int, budget_min: float) -> str:
        """Why comparison ``comparison`` has no instance (or why the group stopped), else ""."""
        return self._why_not(bool(self.logs.get(comparison)), budget_min)

    def _why_not(self, measured: bool, budget_min: float) -> str:
        """Why a comparison (``measured``: it has an instance) has none, or why the group
        stopped, else ""."""
        if self.stopped or measured:
            return self.stopped
        if not self.instances:
            return f"not measured: the budget ({budget_min:g} min) was spent before its first instance"
        return (
            f"not measured: every block of its {self.instances} instance(s) was disturbed (another "
            f"program, the hypervisor or a machine with no spare CPU took CPU the member needed{self.why})"
        )


def _title(group: Group) -> str:
    """A group as the progress line names it: its models and how many configurations it compares
    live (``cnn: the usual choices, 7 configurations (h0)`` for a headline group)."""
    models = ", ".join(dict.fromkeys(str(m.cell.model) for m in group.members))
    what = "the usual choices, " if group.race else ""
    return f"{models}: {what}{len(group.members)} configurations ({group.name})"


def _disturbance(instance: Instance) -> str:
    """ ", k of n blocks disturbed (why)" when any was, else ""."""
    bad = tstats.disturbed_blocks(instance.turns)
    if not bad:
        return ""
    return f", {bad} of {len({t.block for t in instance.turns})} blocks disturbed{_why(instance.turns)}"


def _why(turns: Sequence[Turn]) -> str:
    """ "; busiest other program: NAME, x CPUs", or "; no spare CPU: x CPUs used besides the
    member" (the run's other processes and the kernel on a machine with under a CPU idle)."""
    name, cpus = tstats.busiest_other(turns)
    if name:
        return f"; busiest other program: {name}, {cpus:.2f} CPUs"
    crowded = tstats.crowded_besides(turns)
    return "" if math.isnan(crowded) else f"; no spare CPU: {crowded:.2f} CPUs used besides the member"


class MachineBusy(Exception):
    """Another program disturbed more than the protocol's share of the run's blocks: the run stops
    (its rows are written; the message says which program and how to go on)."""


OUT_OF_MEMORY = ("ResourceExhausted", "OOM when allocating", "out of memory", "CUDA_ERROR_OUT_OF_MEMORY")
"""What a worker's failure says when its device's memory ran out (TensorFlow's allocator, CUDA)."""


def out_of_memory(reason: str) -> bool:
    """Whether a failure reason is a device running out of memory."""
    return any(text in reason for text in OUT_OF_MEMORY)


def _culprits(instance: Instance) -> dict[str, CellEnd]:
    """The member whose own failure ended a dropped instance (not those stopped because of it),
    with its end; empty when no one member is to blame."""
    key = instance.culprit
    if key is None or key not in instance.ends:
        return {}
    return {key: instance.ends[key]}


class TurnsRun:
    """The state of one run in turns: the run's rows and files (:class:`RunState`), each group's
    instances, the cells whose step breakdown is done, the budget's clock."""

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
        self.journal = journal
        self.groups = [GroupRun(g) for g in plan_groups(run.runnable, contenders, max_live(run.protocol))]
        self.headline = any(g.group.race for g in self.groups)
        self.plan = Plan.of(run.protocol, options.startup_timeout_s)
        self.prior = PRIORS[run.platform.device_kind]
        self._named_cache: tuple[tuple[int, ...], set[str]] = ((), set())
        self.steps: dict[str, int] = {}
        """By turn key: the window steps its first completed instance calibrated, which later
        instances reuse (a calibration costs two windows a member, a tenth of a run on 2 cores)."""
        self.unmeasured: list[Measured] = []
        """Comparisons not measured in turns: a member failed, or the group fell back to one
        member at a time."""
        self.instances_of: dict[str, int] = {}
        self.cost = RunCost()
        self.blocks = 0
        self.busy_blocks = 0
        """Blocks measured so far, and of them those another program disturbed (:meth:`check_busy`)."""
        self.current: float | None = None
        """When the instance under way started (None between instances)."""
        self.ending = False
        """No instance that is due fits any more (set after each instance, on the run's thread,
        for the ETA, which a terminal's progress bar reads from its own thread)."""
        self.closing = False
        """The instances are over: the step breakdowns (or the closing peak) began."""
        self.first_race: int | None = None
        """The index of the second stage's first group, once it began (0: no tie to race)."""
        self.t0 = clock()

    def note(self, kind: str, **fields: object) -> None:
        """Append an entry to the run's journal (:mod:`harness.launch.resume`), with the run's
        seconds spent so far."""
        if self.journal is not None:
            self.journal.append({"kind": kind, "elapsed_s": self.clock() - self.t0, **fields})

    def index_of(self, name: str) -> int:
        """The index of the group named ``name`` (a journaled instance's)."""
        return next(i for i, g in enumerate(self.groups) if g.group.name == name)

    def to_break_down(self) -> list[Cell]:
        """The cells whose step breakdown is still to be timed after the turns
        (:mod:`harness.launch.breakdowns`): every cell measured ok so far (``protocol.breakdown``)
        or, with ``protocol.breakdown_named``, those the answer names (:meth:`named`); only those
        whose parts can be isolated (:func:`harness.formulas.breakdown.measurable`)."""
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
        """Step breakdown processes the run's end will start, as far as known now: those of
        :meth:`to_break_down`; with ``protocol.breakdown_named``, at least two per headline group
        (its leader and closest rival) not yet broken down."""
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
        """:meth:`named`, computed again only when a group's instances changed: the progress bar's
        ETA asks for it many times a second, during the turns, from its own thread."""
        key = tuple(g.instances for g in self.groups)
        if self._named_cache[0] != key:
            self._named_cache = (key, self.named())
        return self._named_cache[1]

    def named(self) -> set[str]:
        """The cells the answer names so far: each race group's leader and its closest rival (the
        contender with the highest mean instance log ratio against it), once the group has its
        minimum instances (before that the two change often)."""
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

    def _options(self, member: Member) -> WorkerOptions:
        """A member's worker options: no step breakdown inside an instance (it comes after the
        turns, in a process of its own)."""
        settings = dataclasses.replace(self.options.settings, breakdown=False)
        return dataclasses.replace(self.options, settings=settings)

    def _record(self, cell: Cell, end: CellEnd) -> None:
        k = self.instances_of.get(cell.id, 0)
        self.instances_of[cell.id] = k + 1
        self.run.record(end, k)

    def next(self, share: float = 1.0, first: int = 0) -> int | None:
        """The group (from index ``first`` on) that gets the next instance, or None when the stage
        is over: no comparison open, every group at the most instances, or no instance that is
        due fits in the budget less :meth:`reserve_s` (past a group's minimum: in ``share`` of it;
        below it, only the run's end is kept, not the step breakdowns).
        Headline groups come first (:func:`tstats.next_group`'s ``first``): for the whole budget
        while one has an undecided comparison more instances would likely decide, else until
        :data:`HEADLINE_SHARE` of it is spent. A group whose next instance does not fit is
        treated as at its most instances (it has none left), and the next choice is made."""
        protocol = self.run.protocol
        whole = protocol.budget_s - self._end_s()  # the minimum comes before the step breakdowns
        limit = share * protocol.budget_s - self.reserve_s()
        elapsed = self.clock() - self.t0
        mine = self.groups[first:]
        heads = {i for i, g in enumerate(mine) if g.group.race}
        early = elapsed < HEADLINE_SHARE * limit
        states = [g.state() for g in mine]
        while (
            found := tstats.next_group(
                states,
                protocol.processes,
                protocol.max_processes,
                protocol.min_effect,
                first=heads,
                first_while_open=early,
            )
        ) is not None:
            g = mine[found]
            # a group's minimum instances may use the whole budget; ``share`` bounds the rest
            if elapsed + self.estimate_s(g) <= (whole if g.instances < protocol.processes else limit):
                return first + found
            states[found] = dataclasses.replace(states[found], instances=protocol.max_processes)
        return None

    def estimate_s(self, g: GroupRun) -> float:
        """The seconds of ``g``'s next instance: the mean of its own, else from the run's instances
        so far (:meth:`RunCost.instance_s`), else :func:`prior_instance_s`."""
        if g.instances:
            return g.seconds / g.instances
        members, asked = len(g.group.members), self._asked_s(g.group)
        found = self.cost.instance_s(members, asked)
        return found if found is not None else prior_instance_s(g.group, self.plan, self.prior)

    def reserve_s(self) -> float:
        """Seconds the budget keeps for the run's end: the step breakdowns due
        (:meth:`breakdowns_due`), the closing peak process (as long as the first took) and
        :data:`CLOSE_S` for rows, costs and the report."""
        return self.breakdowns_due() * self.breakdown_s() + self._end_s()

    def _end_s(self) -> float:
        """The closing peak process and :data:`CLOSE_S`."""
        if not self.run.protocol.peak:
            return CLOSE_S
        processes = self.run.result.time.peak_processes if self.run.result.time is not None else 0
        return CLOSE_S + (self.run.peaks.seconds / processes if processes else self.prior.peak_s)

    def seconds_left(self) -> float | None:
        """The run's seconds left, estimated (the progress's ETA): the budget's remaining seconds
        (less :meth:`reserve_s`; none once no instance that is due fits), at most the groups'
        remaining instances up to the most, at least their remaining minimum instances (each
        estimated by :meth:`RunCost.instance_s` from the instances so far; less what the current
        one has run), plus the step breakdowns due and the closing peak; None before the first
        instance ends. A run whose ratios are all decided early ends sooner."""
        if self.cost.instance_s(1) is None:
            return None
        protocol, now = self.run.protocol, self.clock()
        running = 0.0 if self.current is None else now - self.current

        def left(instances: int) -> float:
            total = 0.0
            for g in self.groups:
                more = 0 if g.stopped else max(instances - g.instances, 0)
                if more:
                    members, asked = len(g.group.members), self._asked_s(g.group)
                    total += more * (self.cost.instance_s(members, asked) or 0.0)
            return max(total - running, 0.0)

        budget = max(protocol.budget_s - self.reserve_s() - (now - self.t0), 0.0)
        if self.current is None and self.ending:
            budget = 0.0  # no instance that is due fits: the run ends now
        seconds = min(max(left(protocol.processes), min(budget, left(protocol.max_processes))), budget)
        assert self.run.result.time is not None
        ending = self.run.peaks.seconds / max(self.run.result.time.peak_processes, 1)
        return seconds + ending + self.breakdowns_due() * self.breakdown_s()

    def _asked_s(self, group: Group) -> float:
        return asked_s(group, self.plan)

    def mean_instance_s(self) -> float:
        done = [g for g in self.groups if g.instances]
        return sum(g.seconds for g in done) / max(sum(g.instances for g in done), 1)

    def start_races(self) -> int:
        """The second stage's groups (:func:`race_plan`) appended; returns the index of the first
        group it measures: the first race, or 0 when there is no tie to race (the first stage goes
        on). A run with headline groups races there and has no second stage."""
        first = len(self.groups)
        if not self.headline:
            self.groups += [GroupRun(g) for g in race_plan(self.run, max_live(self.run.protocol))]
        self.first_race = first if first < len(self.groups) else 0
        return self.first_race

    def measure(self, index: int, progress: Progress) -> None:
        """One instance of group ``index``, journaled, then kept (:meth:`apply`)."""
        g = self.groups[index]
        progress.show(f"{_title(g.group)}, round {g.instances + 1}")
        self.current = self.clock()
        try:
            instance = run_instance(
                g.group,
                g.instances + g.dropped,
                self.plan,
                self._options,
                self.launcher,
                f"{g.group.name}-",
                self.steps,
            )
        finally:
            self.current = None
        self.note("instance", instance=resume.encode_instance(instance))
        self.apply(index, instance, progress)
        self.check_busy(instance)

    def check_busy(self, instance: Instance) -> None:
        """Count the instance's blocks; MachineBusy once more than the protocol's share of the
        run's blocks (after its first :data:`BUSY_MIN_BLOCKS`) were disturbed by another program
        or the hypervisor."""
        ids = {t.block for t in instance.turns}
        self.blocks += len(ids)
        self.busy_blocks += len({t.block for t in instance.turns if tstats.by_other_program(t)})
        share = self.run.protocol.busy_share
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
        """Keep one instance of group ``index`` (measured now, or read from the journal): its
        members' processes recorded, its ratios and costs kept."""
        g = self.groups[index]

        def say(label: str, status: str) -> None:
            """The instance on the progress line, its ETA knowing whether another one fits."""
            if progress is not None:
                self.ending = self.next(1.0, self.first_race or 0) is None
                progress.advance(label, status)

        timed = sum(t.seconds for t in instance.turns if not overlapping(t.member))
        members, asked = len(g.group.members), self._asked_s(g.group)
        self.cost.add(instance.phases, timed, instance.processes, not instance.dropped, members, asked)
        if instance.dropped:
            culprits = _culprits(instance)
            if len(g.group.members) > 1 and any(out_of_memory(e.reason) for e in culprits.values()):
                self.sequential(index, next(e.reason for e in culprits.values() if out_of_memory(e.reason)))
                say(f"{_title(g.group)}: do not fit in memory together; measured one by one", "")
                return
            for key, end in culprits.items():
                if (
                    end.event == Event.RECORD and end.row is not None and end.row.status == Status.OK
                ):  # it passed a deadline
                    end = dataclasses.replace(end, event=Event.FAILED, reason=instance.dropped)
                elif instance.dropped not in end.reason:  # the coordinator's words, then the worker's
                    end = dataclasses.replace(end, reason=f"{instance.dropped}; {end.reason}")
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
        disturbed = _disturbance(instance)
        if disturbed and progress is not None and progress.tty:  # the bar's line is overwritten
            progress.warn(f"warning: {_title(g.group)}, round {g.instances}{disturbed}")
        say(f"{_title(g.group)}, round {g.instances}", f"{instance.wall_s:.0f} s{disturbed}")

    def sequential(self, index: int, reason: str) -> None:
        """Group ``index``'s members did not fit in the devices' memory together: each gets a
        group of its own (its instances one after another), and the group's comparisons are
        reported as not measured in turns (the cell rows' ratios then come from separately
        measured processes)."""
        g = self.groups[index]
        note = f"not measured in turns: the group's members did not fit in memory together ({reason[:200]})"
        self.unmeasured += [
            Measured(c, g.group.name, (), (), 0.0, g.dropped + 1, note)
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

    def measured(self) -> list[Measured]:
        budget = self.run.protocol.budget_min
        return [m for g in self.groups for m in g.measured(budget)] + self.unmeasured


def _step(state: TurnsRun, index: int, progress: Progress) -> None:
    """One instance, the progress's total grown to hold it (past the minimum instances the budget
    decides how many come: the ETA is the budget's)."""
    progress.set_total(max(progress.total, progress.done + 1))
    state.measure(index, progress)


def plan_groups(runnable: Sequence[Cell], contenders: Collection[str], live: int) -> list[Group]:
    """The run's groups: the headline groups of ``contenders`` (:func:`headline_groups`), then
    those that measure every other comparison (:func:`groups`)."""
    heads = headline_groups(runnable, contenders, live)
    return heads + groups(runnable, live, heads)


def check_minimum(
    found: Sequence[Group], protocol: Protocol, plan: Plan, prior: Prior, sweep: str = ""
) -> None:
    """HarnessError, before any process starts, when the groups' minimum (:func:`minimum_s`)
    does not fit the budget: what it would take, and what would fit (``sweep``: the named sweep
    the selection came from, which the hint keeps)."""
    need = minimum_s(found, protocol, plan, prior)
    if need <= protocol.budget_s:
        return
    models = sorted({m.cell.model for g in found for m in g.members})
    alone = {
        model: minimum_s(
            [g for g in found if any(m.cell.model == model for m in g.members)], protocol, plan, prior
        )
        for model in models
    }
    fits = [model for model, s in alone.items() if s <= protocol.budget_s]
    flag = f"--sweep {sweep} " if sweep else ""
    fewer = (
        f", or one model alone ({flag}--model {_typed(fits[0])}: about {alone[fits[0]] / 60:.1f} min)"
        if fits and len(models) > 1
        else ""
    )
    raise HarnessError(
        f"Received --budget-min {protocol.budget_min:g}; the selection's minimum ({protocol.processes} "
        f"instances of each of its {len(found)} groups, {sum(len(g.members) for g in found)} members) "
        f"takes about {need / 60:.1f} min by the estimate before any instance ({prior.member_s:g} s "
        f"a member plus the window turns, from {prior.measured}). Give --budget-min "
        f"{math.ceil(need / 60)} or more, fewer --processes, or fewer cells{fewer}."
    )


def _typed(model: str) -> str:
    """A cell's model as ``--model`` takes it (a user's model: FILE.py:function)."""
    return f"{model.source}:{model.function}" if isinstance(model, ModelRef) else model


def asked_s(group: Group, plan: Plan) -> float:
    """Seconds of window turns an instance of ``group`` asks for: 2 per block per member."""
    return len(group.members) * 2 * plan.blocks * plan.turn_s


def prior_instance_s(group: Group, plan: Plan, prior: Prior) -> float:
    """An instance of ``group`` before any has ended, by ``prior``, seconds."""
    return len(group.members) * prior.member_s + prior.stretch * asked_s(group, plan)


def minimum_s(found: Sequence[Group], protocol: Protocol, plan: Plan, prior: Prior) -> float:
    """Seconds a run of groups ``found`` needs at least, by ``prior``: every group's minimum
    instances, the two peak processes and :data:`CLOSE_S`."""
    instances = protocol.processes * math.fsum(prior_instance_s(g, plan, prior) for g in found)
    return instances + (2 * prior.peak_s if protocol.peak else 0.0) + CLOSE_S


def tied_with_fastest(run: RunState, model: str) -> tuple[Cell, list[Cell]] | None:
    """A model's fastest runnable one-tenant cell without a co-tenant of another framework so far
    (median process figure) and the cells tied with it: their ratio to it (Welch's t over the
    process figures, separately measured) is neither higher nor lower. None when no cell of the
    model was measured ok."""
    figures = {
        c.id: [r.row.examples_per_sec.value or 0.0 for r in run.evidence[c.id]]
        for c in run.runnable
        if c.model == model
        and c.tenants == 1
        and c.tenant_framework == NONE  # a shared device is not a configuration to choose
        and run.evidence[c.id]
        and run.ok_so_far(c)
    }
    if not figures:
        return None
    cells = {c.id: c for c in run.runnable}
    best = max(figures, key=lambda k: stats.figure(figures[k]).value)
    tied = [
        cells[k]
        for k in figures
        if k != best
        and not stats.ratio(figures[k], figures[best]).distinguishable(min_effect=run.protocol.min_effect)
    ]
    return cells[best], tied


def race_plan(run: RunState, live: int) -> list[Group]:
    """Second stage: for each model, the configurations tied with its fastest, raced against it in
    turns (groups r0, r1, ...; a contender that cannot share a group with the fastest is left out)."""
    found: list[Group] = []
    for model in sorted({c.model for c in run.runnable}):
        top = tied_with_fastest(run, model)
        if top is not None and top[1]:
            found += [g for g in race_groups(top[1], top[0], live) if g.comparisons]
    return [dataclasses.replace(g, name=f"r{i}") for i, g in enumerate(found)]


def replay(state: TurnsRun, resumed: resume.Resumed) -> None:
    """A resumed run's state rebuilt from its journal: every instance kept as when it was measured
    (its windows rewritten to the same files), the peak samples, the second stage's groups; the
    budget's clock set to the seconds already spent."""
    cells = {c.id: c for c in state.run.runnable}
    for entry in resumed.entries:
        if entry["kind"] == "instance":
            index = state.index_of(entry["instance"]["group"])
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
    """Measure every runnable cell of ``work`` in group instances under its protocol's budget (see
    the module docstring); write every cell row (unsupported ones too) and the ratios table under
    ``output.results``, and journal every instance, peak and stage as it ends to
    ``output.journal``. ``identity``: a new run, or one killed before it wrote its rows whose
    journaled instances are kept and whose budget goes on (``run_id`` and the journal are then its
    own), and when the command started on ``hooks.clock`` (the budget counts from there)."""
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
    progress = hooks.progress or Progress(len(state.groups) * protocol.processes)
    progress.done = sum(g.instances + g.dropped for g in state.groups)
    progress.set_total(max(progress.total, progress.done))
    progress.estimate = progress.estimate or state.seconds_left
    try:
        if run.runnable and not run.peaks.samples and not run.peaks.failures:
            measure_peak(state)
        if not state.closing:
            _stages(state, progress)
        break_down(state, progress)
        if resumed is None or not resumed.ended:
            measure_peak(state)
            state.note("end")
    except KeyboardInterrupt:
        run.result.interrupted = True
    except MachineBusy as busy:
        run.result.interrupted = True
        run.result.stopped = str(busy)
    finally:
        progress.close()
        run.write_rows(state.measured())
        state.write_cost()
    return run.result


def _stages(state: TurnsRun, progress: Progress) -> None:
    """The instances: the first stage and the races (one stage with headline groups)."""
    first = state.first_race
    if first is None:
        while (index := state.next(1.0 if state.headline else RACE_SHARE)) is not None:
            _step(state, index, progress)
        first = state.start_races()
        state.note("races")
    while (index := state.next(1.0, first)) is not None:
        _step(state, index, progress)


def break_down(state: TurnsRun, progress: Progress) -> None:
    """The step breakdowns after the turns, one process per cell (:meth:`TurnsRun.to_break_down`,
    :mod:`harness.launch.breakdowns`), each journaled; one whose process no longer fits the budget
    is not started, and its row says so."""
    state.closing = True
    todo = state.to_break_down()
    progress.set_total(progress.done + len(todo))
    for i, cell in enumerate(todo):
        label = f"{cell.model}: step breakdown of {words.describe(cell.to_dict())}"
        left = state.run.protocol.budget_s - (state.clock() - state.t0) - state._end_s()
        if state.breakdown_s() > left:
            apart = Apart(cell.id, not_measured("the budget was spent before its process"), 0.0)
        else:
            progress.show(label)
            apart = measure_apart(cell, state.options, state.launcher, f"b{i}-")
        state.keep(apart)
        state.note("breakdown", apart=resume.encode_apart(apart))
        progress.advance(label, f"{apart.seconds:.0f} s")


def measure_peak(state: TurnsRun) -> None:
    """One peak process, journaled; with the workers' environment, so that it is forked from
    their fork server."""
    state.run.measure_peak(worker_env(state.options, state.options.log_dir))
    if state.run.peaks.dtypes:
        state.note("peak", **resume.peak_entry(state.run.peaks))
