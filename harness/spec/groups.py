"""Which ratios a run reports (:class:`Comparison`), and the groups of cells (:class:`Group`) whose
live processes take turns to measure them (docs/explanation/measurement.md). Pure data: races
(:func:`headline_groups`, :func:`race_groups`), the rest (:func:`groups`, no group of several cells
above ``max_live`` live processes), ``ab``'s (:func:`ab_group`); the turns' order:
:func:`turn_order`. Which strategies a relation applies to is the descriptors' to say
(:mod:`harness.spec.strategies`: the reference strategy, the all-reduce option axis)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from harness.errors import require
from harness.spec import words
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.cell import Cell
from harness.spec.frameworks import NONE, tenant_key, together_key
from harness.spec.strategies import only_strategy

PROCESS_BYTES = 800 * 2**20
"""Resident memory of one live worker process, bytes: measured 731-772 MiB peak RSS (``ps``, every
0.3 s) for the CNN at batch 64 under default and mirrored on 1 and 2 logical CPU devices, all four
live in one group (tensorflow-cpu 2.21, 2-core VM, 2026-11-25), rounded up. TensorFlow's runtime
is most of it; a larger model adds its weights, gradients and activations."""

LIVE_MEMORY_SHARE = 0.5
"""The share of the host's available memory that a group's live processes may hold together (the
rest is headroom for the parent, the page cache and a process's peak above its resident size)."""

MAX_LIVE_CAP = 8
"""Most live processes in one group whatever the memory: more members spread each member's turns
further apart in time, which is what measuring in turns is meant to avoid."""


class Relation(StrEnum):
    """What a :class:`Comparison` compares: the ratio is subject / reference throughput."""

    SCALING = "scaling"
    """A cell on several devices against its 1-device baseline (as
    :func:`harness.results.references.find_baseline`): same configuration, one replica on one worker,
    same per-replica batch (weak scaling) or same global batch (strong); scale 1 / devices, so the
    ratio is the scaling efficiency."""
    CROSS_DEVICE_OPS = "cross_device_ops"
    """A cell whose strategy has an all-reduce option, at a value other than the option axis's
    default (``auto``), against the same cell at the default; only on several devices (on one the
    option collapses to ``none``)."""
    STRATEGY = "strategy"
    """A one-tenant cell of a non-reference strategy against the reference strategy's cell (one
    device) at the same model, data, per-replica batch, loop, steps per execution, precision and
    accumulation steps: the speed-up over plain training, on any number of devices."""
    ACCUMULATION = "accumulation"
    """A cell with ``accum_steps`` k > 1 against the same cell with 1."""
    LOOP = "loop"
    """A cell on a loop other than the default (``fit``) against the same cell on ``ctl``."""
    XLA = "xla"
    """A cell with XLA on (``--jit-compile on``) against the same cell with it off."""
    OPTIMIZER = "optimizer"
    """A cell with an optimizer other than plain SGD (``--optimizer adam``) against the same cell
    with plain SGD."""
    PRECISION = "precision"
    """A cell in mixed precision against the same cell in float32."""
    BATCH = "batch"
    """A cell at another per-replica batch against the same cell at batch 64 (examples/s against
    examples/s: what a bigger batch buys in throughput, not in convergence)."""
    STEPS_PER_EXECUTION = "steps_per_execution"
    """A cell at another number of updates per tf.function call against the same cell at 10."""
    COTENANCY = "cotenancy"
    """A cell with T > 1 tenants against the same cell alone (as
    :func:`harness.results.references.find_alone`)."""
    SHARED = "shared"
    """One side of a cell with a co-tenant from another framework (the TensorFlow process, or the
    co-tenant) in its turns taken with the other side running, against the same process's turns
    alone in the same instances (:func:`shared_comparisons`): the share of its throughput alone
    that it keeps."""
    AB = "ab"
    """Side B against side A of the same cell (:func:`ab_group`)."""
    FASTEST = "fastest"
    """Second stage: a configuration against its model's fastest (:func:`race_groups`)."""


def _others_against_reference(axis: str) -> str:
    """``fit against ctl``: an axis's other values against its reference."""
    a = AXIS_BY_NAME[axis]
    return f"{', '.join(v for v in a.choices if v != a.reference)} against {a.reference}"


_REFERENCE_STRATEGY = only_strategy(lambda s: s.reference).name
"""The plain way to train (``default``): STRATEGY's reference."""

COMPARES: dict[Relation, str] = {
    Relation.SCALING: "a cell against its 1-device baseline; the ratio is the scaling efficiency",
    Relation.CROSS_DEVICE_OPS: f"an op against {AXIS_BY_NAME['cross_device_ops'].reference}",
    Relation.STRATEGY: f"against {_REFERENCE_STRATEGY}",
    Relation.ACCUMULATION: f"k against {AXIS_BY_NAME['accum_steps'].reference}",
    Relation.LOOP: _others_against_reference("loop"),
    Relation.XLA: f"{AXIS_BY_NAME['xla'].flag} {_others_against_reference('xla')}",
    Relation.OPTIMIZER: _others_against_reference("optimizer"),
    Relation.PRECISION: _others_against_reference("precision"),
    Relation.BATCH: f"batch B against {AXIS_BY_NAME['batch'].reference}",
    Relation.STEPS_PER_EXECUTION: f"k updates per call against {AXIS_BY_NAME['steps_per_execution'].reference}",
    Relation.COTENANCY: f"T tenants against {AXIS_BY_NAME['tenants'].reference}",
    Relation.SHARED: "a side with a co-tenant from another framework against itself alone",
    Relation.AB: "side B against side A",
    Relation.FASTEST: "a configuration against its model's fastest",
}
"""What each relation compares, in a few words (the ratios table's ``relation`` column says each)."""


@dataclass(frozen=True)
class Member:
    """One cell's processes in a group: ``side`` is empty in a run, ``A`` or ``B`` in ``ab``."""

    cell: Cell
    side: str = ""

    @property
    def key(self) -> str:
        """The member's name in its group and in comparisons: the cell's id, prefixed ``side:``."""
        return f"{self.side}:{self.cell.id}" if self.side else self.cell.id

    @property
    def live(self) -> int:
        """Live processes this member holds: every task of every tenant, and a co-tenant from
        another framework."""
        return self.cell.processes * self.cell.tenants + (self.cell.tenant_framework != NONE)


@dataclass(frozen=True)
class Comparison:
    """One reported ratio: ``scale`` x throughput of ``subject`` / throughput of ``reference``
    (both :attr:`Member.key`)."""

    relation: Relation
    subject: str
    reference: str
    scale: float = 1.0
    """What the throughput ratio is multiplied by (SCALING: 1 / the subject's devices)."""


@dataclass(frozen=True)
class Group:
    """Members started together that take turns; ``comparisons`` are the ratios measured in it."""

    members: tuple[Member, ...]
    comparisons: tuple[Comparison, ...]
    name: str = ""
    """Stable within a plan: ``h0, ...`` (:func:`headline_groups`), ``g0, g1, ...`` (:func:`groups`),
    ``r0, ...`` (:func:`race_groups`)."""
    race: bool = False
    """A headline group: besides ``comparisons``, each member is compared against the fastest of
    them in the same turns (Relation.FASTEST; which one is fastest is known only once measured)."""

    @property
    def live(self) -> int:
        """Live processes of all members together."""
        return sum(m.live for m in self.members)

    def member(self, key: str) -> Member:
        """The member whose :attr:`Member.key` is ``key`` (KeyError if none)."""
        for m in self.members:
            if m.key == key:
                return m
        raise KeyError(f"{key} is not a member of group {self.name or '(unnamed)'}")


# Comparisons ---------------------------------------------------------------------------------------


def _at_default(cell: Cell, axis: str) -> Cell:
    """The same cell with ``axis`` at its default value (collapsed as any cell is)."""
    return Cell.from_dict({**cell.to_dict(), axis: AXIS_BY_NAME[axis].default})


def _one_device(cell: Cell) -> Cell | None:
    """SCALING's reference: one replica on one worker, ``batch`` unchanged (on one device it is
    both the per-replica and the global batch, so weak keeps the per-replica batch and strong the
    global one). Same ps count: a parameter-server cell's ps tasks hold its variables."""
    if cell.devices == 1:
        return None
    return Cell.from_dict({**cell.to_dict(), "replicas": 1, "workers": 1})


def _default_option(cell: Cell) -> Cell | None:
    """CROSS_DEVICE_OPS's reference: the option axis at its default (``auto``)."""
    axis = cell.kind.option_axis
    return None if axis is None else _at_default(cell, axis)


def _reference_strategy(cell: Cell) -> Cell | None:
    """STRATEGY's reference: the reference strategy on one device at the subject's per-replica
    batch, one tenant (None for a co-tenant subject or the reference strategy itself)."""
    if cell.kind.reference or cell.tenants > 1 or cell.per_replica_batch < 1:
        return None
    return Cell.from_dict(
        {
            **cell.to_dict(),
            "strategy": _REFERENCE_STRATEGY,
            "batch": cell.per_replica_batch,
            "scaling": AXIS_BY_NAME["scaling"].default,
        }
    )


_REFERENCES: dict[Relation, Callable[[Cell], Cell | None]] = {
    Relation.SCALING: _one_device,
    Relation.CROSS_DEVICE_OPS: _default_option,
    Relation.STRATEGY: _reference_strategy,
    Relation.ACCUMULATION: lambda c: _at_default(c, "accum_steps"),
    Relation.LOOP: lambda c: _at_default(c, "loop"),
    Relation.XLA: lambda c: _at_default(c, "xla"),
    Relation.OPTIMIZER: lambda c: _at_default(c, "optimizer"),
    Relation.PRECISION: lambda c: _at_default(c, "precision"),
    Relation.BATCH: lambda c: _at_default(c, "batch"),
    Relation.STEPS_PER_EXECUTION: lambda c: _at_default(c, "steps_per_execution"),
    Relation.COTENANCY: lambda c: _at_default(c, "tenants"),
}
"""The relations a run reports, in :class:`Relation`'s order: the cell each compares a subject
against (None, or the subject itself: no comparison)."""


def _unique(cells: Iterable[Cell]) -> dict[str, Cell]:
    """The cells by id, first occurrence kept, in order."""
    out: dict[str, Cell] = {}
    for cell in cells:
        out.setdefault(cell.id, cell)
    return out


def comparisons(cells: Sequence[Cell]) -> list[Comparison]:
    """Every comparison among ``cells`` whose two ends are both in ``cells``: for each cell in
    order, one per relation that applies to it (in :class:`Relation`'s order), deduplicated. A
    cell compared with its all-reduce option's default (CROSS_DEVICE_OPS) is compared with
    nothing else: the default option carries the strategy's scaling and speed-up."""
    by_id = _unique(cells)
    found: list[Comparison] = []
    for cell in by_id.values():
        if cell.tenant_framework != NONE:  # its ratios are inside its own member
            continue
        option, rules = _default_option(cell), _REFERENCES
        if option is not None and option.id != cell.id and option.id in by_id:
            rules = {Relation.CROSS_DEVICE_OPS: _default_option}
        for relation, find in rules.items():
            reference = find(cell)
            if reference is not None and reference.id != cell.id and reference.id in by_id:
                scale = 1.0 / cell.devices if relation == Relation.SCALING else 1.0
                found.append(Comparison(relation, cell.id, reference.id, scale))
    return found


def shared_comparisons(member: Member) -> tuple[Comparison, ...]:
    """A member with a co-tenant from another framework: each side's turns taken together against
    its turns alone (SHARED; the TensorFlow side first). Nothing for another member."""
    framework = member.cell.tenant_framework
    if framework == NONE:
        return ()
    tenant = tenant_key(member.key, framework)
    return (
        Comparison(Relation.SHARED, together_key(member.key), member.key),
        Comparison(Relation.SHARED, together_key(tenant), tenant),
    )


# Groups --------------------------------------------------------------------------------------------


def default_max_live(available_bytes: int, process_bytes: int = PROCESS_BYTES) -> int:
    """Most live processes in one group: :data:`LIVE_MEMORY_SHARE` of ``available_bytes`` (the
    host's available memory, bytes) over ``process_bytes`` (one live process, bytes), at least 2
    (one comparison) and at most :data:`MAX_LIVE_CAP`."""
    require({"process_bytes": (process_bytes, process_bytes > 0, "a positive number of bytes")})
    fitting = math.floor(LIVE_MEMORY_SHARE * max(available_bytes, 0) / process_bytes)
    return max(2, min(MAX_LIVE_CAP, fitting))


def _check_max_live(max_live: int) -> None:
    require({"max_live": (max_live, max_live >= 1, "an integer of at least 1")})


def _live(cells: dict[str, Cell]) -> dict[str, int]:
    return {key: Member(cell).live for key, cell in cells.items()}


def _components(keys: Sequence[str], edges: Sequence[Comparison]) -> list[list[str]]:
    """The connected components of the comparison graph, each in ``keys`` order, ordered by their
    first member (a cell in no comparison is a component of its own)."""
    order = {k: i for i, k in enumerate(keys)}
    parent = {k: k for k in keys}

    def root(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for e in edges:
        a, b = root(e.subject), root(e.reference)
        if a != b:
            parent[max(a, b, key=order.__getitem__)] = min(a, b, key=order.__getitem__)
    components: dict[str, list[str]] = {}
    for k in keys:
        components.setdefault(root(k), []).append(k)
    return list(components.values())


def _covers(pack: Sequence[str], edge: Comparison) -> bool:
    return edge.subject in pack and edge.reference in pack


def _other_end(edge: Comparison, key: str) -> str:
    return edge.reference if edge.subject == key else edge.subject


def _grow(
    component: Sequence[str], edges: Sequence[Comparison], live: dict[str, int], max_live: int
) -> list[list[str]]:
    """Split a component too large for one group into packs (cell ids) that cover every edge.

    Each pack starts from the cell with the most comparisons not yet covered, then adds, while one
    fits, the cell that covers the most uncovered comparisons with the pack per live process it
    adds (ties: a cell not in an earlier pack, then order). Every edge fits ``max_live`` on its
    own, so each pack covers at least one."""
    incident: dict[str, list[Comparison]] = {k: [] for k in component}
    for edge in edges:
        incident[edge.subject].append(edge)
        incident[edge.reference].append(edge)
    order = {k: i for i, k in enumerate(component)}
    uncovered = set(edges)
    packs: list[list[str]] = []
    placed: set[str] = set()
    while uncovered:
        seed = max(component, key=lambda k: sum(e in uncovered for e in incident[k]))
        pack = [seed]
        gain = Counter(_other_end(e, seed) for e in incident[seed] if e in uncovered)
        while True:
            room = max_live - _live_of(pack, live)
            fitting = [k for k, g in gain.items() if g and k not in pack and live[k] <= room]
            if not fitting:
                break
            best = max(fitting, key=lambda k: (gain[k] / live[k], k not in placed, -order[k]))
            pack.append(best)
            gain.update(_other_end(e, best) for e in incident[best] if e in uncovered)
        packs.append(pack)
        placed.update(pack)
        uncovered -= {e for k in pack for e in incident[k] if _covers(pack, e)}
    return packs


def _live_of(pack: Iterable[str], live: dict[str, int]) -> int:
    return sum(live[k] for k in pack)


def _merge(packs: list[list[str]], live: dict[str, int], max_live: int) -> list[list[str]]:
    """Merge the first two packs that share a cell and whose union fits ``max_live``, until none
    do: the shared cells are then measured once less."""
    packs = [list(p) for p in packs]
    for i, j in itertools.combinations(range(len(packs)), 2):
        if set(packs[i]) & set(packs[j]) and _live_of(set(packs[i]) | set(packs[j]), live) <= max_live:
            packs[i] += [k for k in packs[j] if k not in packs[i]]
            del packs[j]
            return _merge(packs, live, max_live)
    return packs


def _prune(packs: list[list[str]], edges: Sequence[Comparison]) -> list[list[str]]:
    """Drop a cell from a pack where every comparison it covers there another pack covers too (so
    it is measured elsewhere): one repeat less, every comparison still covered."""
    packs = [list(p) for p in packs]
    for pack in packs:
        for k in list(pack):
            others = [p for p in packs if p is not pack]
            here = [e for e in edges if k in (e.subject, e.reference) and _covers(pack, e)]
            if any(k in p for p in others) and all(any(_covers(p, e) for p in others) for e in here):
                pack.remove(k)
    return [p for p in packs if p]


def _packs(cells: dict[str, Cell], edges: Sequence[Comparison], max_live: int) -> list[list[str]]:
    """Cell ids per group, each in ``cells`` order (see :func:`groups`)."""
    live = _live(cells)
    keys = list(cells)
    order = {k: i for i, k in enumerate(keys)}
    packs: list[list[str]] = []
    for component in _components(keys, edges):
        if len(component) == 1 or _live_of(component, live) <= max_live:
            packs.append(component)
            continue
        inside = [e for e in edges if e.subject in component]
        split = _prune(_merge(_grow(component, inside, live, max_live), live, max_live), inside)
        packs.extend(sorted(p, key=order.__getitem__) for p in split)
    return packs


def raceable(cell: Cell, max_live: int) -> bool:
    """Whether a contender can be raced: one tenant, no co-tenant of another framework (a shared
    device is not a configuration to choose), its processes within ``max_live``."""
    return cell.tenants == 1 and cell.tenant_framework == NONE and Member(cell).live <= max_live


def headline_groups(cells: Sequence[Cell], contenders: Collection[str], max_live: int) -> list[Group]:
    """Each model's contenders (the cells of ``cells`` whose ids are in ``contenders`` and that are
    :func:`raceable`) live together in race groups ``h0, h1, ...`` (in the order of the models'
    first cells), with every comparison among them: one per model where they fit ``max_live``,
    else several, filled in order, of two contenders or more (a contender left alone is in none:
    :func:`groups` measures it, and the second stage races it against the leader, as it does every
    contender outside the leader's group). A model with one contender has no race."""
    _check_max_live(max_live)
    by_model: dict[str, list[list[Cell]]] = {}
    for cell in _unique(cells).values():
        if cell.id in contenders and raceable(cell, max_live):
            packs = by_model.setdefault(cell.model, [[]])
            if sum(Member(c).live for c in packs[-1]) + Member(cell).live > max_live:
                packs.append([])
            packs[-1].append(cell)
    out: list[Group] = []
    for mine in (p for packs in by_model.values() for p in packs if len(p) > 1):
        out.append(Group(tuple(Member(c) for c in mine), tuple(comparisons(mine)), f"h{len(out)}", race=True))
    return out


def split_race(
    cells: Sequence[Cell], contenders: Collection[str], heads: Sequence[Group], max_live: int
) -> bool:
    """Whether some model's :func:`raceable` contenders among ``cells`` (two or more) are not all
    in one of the race groups ``heads``: its race needs a second stage against its leader."""
    by_model: dict[str, set[str]] = {}
    for c in _unique(cells).values():
        if c.id in contenders and raceable(c, max_live):
            by_model.setdefault(c.model, set()).add(c.id)
    held = [{m.key for m in g.members} for g in heads]
    return any(len(ids) > 1 and not any(ids <= h for h in held) for ids in by_model.values())


def race_lines(cells: Sequence[Cell], contenders: Collection[str], max_live: int) -> list[str]:
    """Each model's contenders as the plan says them, one line per race group and one for those
    raced in the second stage or not at all (with why), configurations in words."""
    found = [c for c in _unique(cells).values() if c.id in contenders]
    names = dict(zip((c.id for c in found), words.labels([c.to_dict() for c in found]), strict=True))
    heads = headline_groups(found, contenders, max_live)
    out = []
    for model in dict.fromkeys(c.model for c in found):
        mine = [g for g in heads if g.members[0].cell.model == model]
        out += [
            f"  {model}, live together ({g.name}): {'; '.join(names[m.key] for m in g.members)}" for g in mine
        ]
        rest = [c for c in found if c.model == model and c.id not in {m.key for g in mine for m in g.members}]
        later = [names[c.id] for c in rest if raceable(c, max_live)]
        never = [names[c.id] for c in rest if not raceable(c, max_live)]
        if later and (mine or len(later) > 1):
            out.append(
                f"  {model}, then against the leader (no room in a race of {max_live} live processes): {'; '.join(later)}"
            )
        if never:
            out.append(
                f"  {model}, not raced (a co-tenant, or more than {max_live} processes): {'; '.join(never)}"
            )
    return out


def groups(cells: Sequence[Cell], max_live: int, taken: Sequence[Group] = ()) -> list[Group]:
    """The cells packed into groups ``g0, g1, ...`` to measure in turns every comparison the groups
    ``taken`` (:func:`headline_groups`) do not (a cell of a taken group is in no group of its own).
    Each comparison whose two ends fit ``max_live`` together has both in one group and is listed in
    the first such group; the others are left out. A cell in no measurable comparison has a group of
    its own (alone it may exceed ``max_live``) and joins no other (whose turns it would spread); no
    group of several cells exceeds ``max_live``. Packing: each connected component of the comparison
    graph that fits ``max_live`` is one group, a larger one split greedily (few cells measured twice);
    members in ``cells``' order (baselines first). Deterministic."""
    _check_max_live(max_live)
    by_id = _unique(cells)
    live = _live(by_id)
    listed = {c for g in taken for c in g.comparisons}
    fit = [c for c in comparisons(list(by_id.values())) if live[c.subject] + live[c.reference] <= max_live]
    edges = [c for c in fit if c not in listed]
    placed = {m.key for g in taken for m in g.members}
    ends = {k for e in edges for k in (e.subject, e.reference)}
    by_id = {k: c for k, c in by_id.items() if k in ends or k not in placed}
    packs = _packs(by_id, edges, max_live)
    out: list[Group] = []
    for i, pack in enumerate(packs):
        measured = [e for e in edges if e not in listed and _covers(pack, e)]
        listed.update(measured)
        members = tuple(Member(by_id[k]) for k in pack)
        inner = [c for m in members for c in shared_comparisons(m)]
        out.append(Group(members, (*measured, *inner), f"g{i}"))
    return out


def race_groups(contenders: Sequence[Cell], fastest: Cell, max_live: int) -> list[Group]:
    """Second stage: ``contenders`` (outside the race group of a model's ``fastest``), each against it.

    Groups ``r0, r1, ...`` each hold ``fastest`` and as many contenders (in order, first fit) as fit
    ``max_live``, with one FASTEST comparison per contender (subject the contender, reference
    ``fastest``). A contender that cannot share a group with ``fastest`` gets a group of its own
    with no comparison, as :func:`groups` does; ``fastest`` is in a group even with no contender."""
    _check_max_live(max_live)
    head = Member(fastest)
    packs: list[list[Member]] = []
    alone: list[Member] = []
    for cell in _unique(contenders).values():
        member = Member(cell)
        if cell.id == fastest.id:
            continue
        if head.live + member.live > max_live:
            alone.append(member)
        elif packs and sum(m.live for m in packs[-1]) + member.live <= max_live:
            packs[-1].append(member)
        else:
            packs.append([head, member])
    found = [
        (tuple(pack), tuple(Comparison(Relation.FASTEST, m.key, head.key) for m in pack[1:]))
        for pack in packs or [[head]]
    ] + [((m,), ()) for m in alone]
    return [Group(members, compared, f"r{i}") for i, (members, compared) in enumerate(found)]


def ab_group(cell: Cell) -> Group:
    """The two sides of ``ab``: members A and B of ``cell``, one AB comparison (B against A)."""
    a, b = Member(cell, "A"), Member(cell, "B")
    return Group((a, b), (Comparison(Relation.AB, b.key, a.key),), "ab")


def turn_order(members: int, block: int, seed: int) -> list[int]:
    """The member indices (0-based) in the order block ``block`` (0-based) gives them turns.

    Every member has two turns per block, placed so that a drift in time affects all alike: one
    member ``[0, 0]``; two ABBA on even blocks, BAAB on odd ones; more, a permutation drawn from
    ``random.Random(f"{seed}/{block}")`` followed by its reverse (each member's two turns average
    to the block's middle)."""
    require(
        {
            "members": (members, members >= 1, "an integer of at least 1"),
            "block": (block, block >= 0, "an integer of at least 0"),
        }
    )
    if members <= 2:
        first = list(range(members)) if block % 2 == 0 else list(reversed(range(members)))
        return first + first[::-1]
    order = list(range(members))
    random.Random(f"{seed}/{block}").shuffle(order)
    return order + order[::-1]
