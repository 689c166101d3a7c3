"""One group's instances in a run in turns (:class:`GroupRun`) and the second stage of a race that
did not fit one group (:func:`race_plan`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from harness.formulas import stats
from harness.formulas import turns as tstats
from harness.formulas.turns import Turn
from harness.launch.cells.runner import RunState
from harness.launch.instances.turns import Instance
from harness.results.ratios import Evidence
from harness.spec.groups import Comparison, Group, Relation, race_groups, raceable

SCALING_CI_WIDTH = 0.10
"""The precision target of a race group's scaling comparisons: the widest 95% CI, as a fraction of
the efficiency ((high - low) / value), at which it stops wanting instances; wider, it stays open
even when its verdict is decided, up to ``protocol.max_processes`` instances."""


@dataclass
class GroupRun:
    """One group's instances so far: the group (failed members leave it), each comparison's instance
    and block log ratios, wall seconds, dropped instances."""

    group: Group
    logs: dict[int, list[float]] = field(default_factory=dict)
    blocks: dict[int, list[tuple[float, ...]]] = field(default_factory=dict)
    instances: int = 0
    seconds: float = 0.0
    dropped: int = 0
    stopped: str = ""
    disturbed: int = 0
    """Blocks left out because something else used the CPUs in a turn."""
    why: str = ""
    """Why the last disturbed instance was (:func:`_why`)."""
    turns: list[list[Turn]] = field(default_factory=list)
    """A race group's undisturbed turns, per completed instance."""

    def state(self) -> tstats.GroupState:
        """Where the group stands for the budget: its comparisons (then its race's) with their
        precision targets (:data:`SCALING_CI_WIDTH` or None); a stopped group has none."""
        if self.stopped:
            return tstats.GroupState(self.group.name, 10**9, self.per_s, ())
        raced = tuple(logs for _, logs, _ in self.race())
        comps = tuple(tuple(self.logs.get(i, ())) for i in range(len(self.group.comparisons))) + raced
        scaling = [self.group.race and c.relation == Relation.SCALING for c in self.group.comparisons]
        targets = tuple(SCALING_CI_WIDTH if t else None for t in scaling) + (None,) * len(raced)
        return tstats.GroupState(self.group.name, self.instances, self.per_s, comps, targets)

    @property
    def per_s(self) -> float:
        """Mean wall seconds of an instance, 0 before any."""
        return self.seconds / self.instances if self.instances else 0.0

    def leader(self) -> str | None:
        """A race group's fastest member so far by mean instance log ratio against its first member
        (None before an undisturbed block, or for another group)."""
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
        """A race group's comparisons of each member against its :meth:`leader` (Relation.FASTEST) with
        their instance and block log ratios (before a leader, against the first member, no evidence)."""
        if not self.group.race or len(self.group.members) < 2:
            return []
        lead = self.leader()
        if lead is None:
            head = self.group.members[0].key
            return [(Comparison(Relation.FASTEST, m.key, head), (), ()) for m in self.group.members[1:]]
        out = []
        for key in (m.key for m in self.group.members if m.key != lead):
            kept = tuple(b for t in self.turns if (b := tuple(tstats.block_log_ratios(t, key, lead))))
            out.append((Comparison(Relation.FASTEST, key, lead), tuple(sum(b) / len(b) for b in kept), kept))
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

    def without(self, keys: set[str]) -> list[Evidence]:
        """The group without members ``keys`` (failed or invalid); returns their comparisons, as not
        measured in turns."""
        note = "not measured in turns: {} failed or is invalid"
        gone = [
            Evidence(c, self.group.name, (), (), 0.0, self.dropped, note.format(k))
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

    def measured(self, budget_min: float) -> list[Evidence]:
        """Its comparisons as measured (a race group's against its fastest member last); a group
        the budget never reached says so in their note."""
        fixed = [
            (c, tuple(self.logs.get(i, ())), tuple(self.blocks.get(i, ())))
            for i, c in enumerate(self.group.comparisons)
        ]
        name, per_s, dropped, disturbed = self.group.name, self.per_s, self.dropped, self.disturbed
        return [
            Evidence(c, name, logs, blocks, per_s, dropped, self._why_not(bool(logs), budget_min), disturbed)
            for c, logs, blocks in [*fixed, *self.race()]
        ]

    def _why_not(self, measured: bool, budget_min: float) -> str:
        """Why a comparison (``measured``: it has an instance) has none, or the group stopped, else ""."""
        if self.stopped or measured:
            return self.stopped
        if not self.instances:
            return f"not measured: the budget ({budget_min:g} min) was spent before its first instance"
        return (
            f"not measured: every block of its {self.instances} instance(s) was disturbed (another "
            f"program, the hypervisor or a machine with no spare CPU took CPU the member needed{self.why})"
        )


def _why(turns: Sequence[Turn]) -> str:
    """ "; busiest other program: NAME, x CPUs", or "; no spare CPU: x CPUs used besides the member"."""
    name, cpus = tstats.busiest_other(turns)
    if name:
        return f"; busiest other program: {name}, {cpus:.2f} CPUs"
    crowded = tstats.crowded_besides(turns)
    return "" if math.isnan(crowded) else f"; no spare CPU: {crowded:.2f} CPUs used besides the member"


def _figure(run: RunState, cell_id: str) -> float:
    """A cell's figure so far: the median of its processes' examples/s."""
    return stats.figure([r.row.examples_per_sec.value or 0.0 for r in run.evidence[cell_id]]).value


def race_plan(
    run: RunState, heads: Sequence[GroupRun], contenders: Collection[str], live: int
) -> list[Group]:
    """Second stage: for each model whose contenders did not fit one race group, its leader (the
    fastest by figure of its race groups' leaders, else of its contenders) raced against every
    contender measured ok outside the leader's group (groups r0, r1, ...)."""
    cells = {c.id: c for c in run.runnable}
    found: list[Group] = []
    for model in sorted({c.model for c in run.runnable}):
        mine = [
            k
            for k, c in cells.items()
            if c.model == model
            and k in contenders
            and raceable(c, live)
            and run.evidence[k]
            and run.ok_so_far(c)
        ]
        races = [g for g in heads if g.group.race and g.group.members[0].cell.model == model]
        leaders = [k for g in races if (k := g.leader()) is not None and k in mine] or mine
        if not leaders:
            continue
        best = max(leaders, key=lambda k: _figure(run, k))
        home = {m.key for g in races if best in {m.key for m in g.group.members} for m in g.group.members}
        others = [cells[k] for k in mine if k != best and k not in home]
        found += [g for g in race_groups(others, cells[best], live) if g.comparisons]
    return [dataclasses.replace(g, name=f"r{i}") for i, g in enumerate(found)]
