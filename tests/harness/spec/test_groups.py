"""harness.spec.groups: the comparisons a run reports and the groups that measure them in turns.
Pure: no TensorFlow, no processes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from harness.errors import HarnessError
from harness.spec.cell import Cell
from harness.spec.groups import (
    MAX_LIVE_CAP,
    PROCESS_BYTES,
    Comparison,
    Group,
    Member,
    Relation,
    ab_group,
    comparisons,
    default_max_live,
    groups,
    headline_groups,
    race_groups,
    race_lines,
    split_race,
    turn_order,
)


def _found(cells: Sequence[Cell]) -> set[tuple[Relation, str, str]]:
    return {(c.relation, c.subject, c.reference) for c in comparisons(cells)}


def unmeasurable(cells: Sequence[Cell], max_live: int) -> list[Comparison]:
    """The comparisons whose two ends together hold more than ``max_live`` live processes."""
    live = {c.id: Member(c).live for c in cells}
    return [c for c in comparisons(cells) if live[c.subject] + live[c.reference] > max_live]


def _repeats(plan: Sequence[Group]) -> int:
    """Measurements beyond the first, over all cells."""
    return sum(n - 1 for n in Counter(m.key for g in plan for m in g.members).values())


def _check_plan(cells: Sequence[Cell], max_live: int) -> list[Group]:
    """groups()'s promises: every measurable comparison listed once, in a group holding both ends;
    shared groups within max_live; every cell in a group; names g0, g1, ..."""
    plan = groups(cells, max_live)
    assert [g.name for g in plan] == [f"g{i}" for i in range(len(plan))]
    listed = [c for g in plan for c in g.comparisons]
    for group in plan:
        keys = [m.key for m in group.members]
        assert len(keys) == len(set(keys))
        assert all(c.subject in keys and c.reference in keys for c in group.comparisons)
        assert len(group.members) == 1 or group.live <= max_live
    assert len(listed) == len(set(listed))
    assert set(listed) | set(unmeasurable(cells, max_live)) == set(comparisons(cells))
    assert not set(listed) & set(unmeasurable(cells, max_live))
    assert {m.key for g in plan for m in g.members} == {c.id for c in cells}
    return plan


# --------------------------------------------------------------------------------------------------
# Members
# --------------------------------------------------------------------------------------------------


def test_a_member_holds_every_task_of_every_tenant() -> None:
    assert Member(Cell(strategy="default", tenants=3)).live == 3
    assert Member(Cell(strategy="multi_worker_mirrored", workers=3)).live == 3
    assert Member(Cell(strategy="parameter_server", workers=2, ps=1)).live == 4
    cell = Cell(strategy="mirrored", replicas=2)
    assert Member(cell).key == cell.id and Member(cell, "B").key == f"B:{cell.id}"


# --------------------------------------------------------------------------------------------------
# Comparisons, relation by relation
# --------------------------------------------------------------------------------------------------


def test_scaling_against_the_one_device_cell() -> None:
    r1, r2, r4 = (Cell(strategy="mirrored", replicas=n) for n in (1, 2, 4))
    found = comparisons([r1, r2, r4])
    assert [(c.relation, c.subject, c.reference, c.scale) for c in found] == [
        (Relation.SCALING, r2.id, r1.id, 0.5),
        (Relation.SCALING, r4.id, r1.id, 0.25),
    ]
    assert comparisons([r2, r4]) == []


def test_scaling_baseline_weak_keeps_the_per_replica_batch_strong_the_global_one() -> None:
    b64, b128 = Cell(strategy="mirrored", batch=64), Cell(strategy="mirrored", batch=128)
    weak = Cell(strategy="mirrored", replicas=2, batch=64)
    strong = Cell(strategy="mirrored", replicas=2, batch=128, scaling="strong")
    assert _found([b64, b128, weak, strong]) == {
        (Relation.SCALING, weak.id, b64.id),
        (Relation.SCALING, strong.id, b128.id),
        (Relation.BATCH, b128.id, b64.id),
    }
    assert _found([b64, strong]) == set()


def test_scaling_of_multi_worker_cells() -> None:
    w1, w2 = (Cell(strategy="multi_worker_mirrored", workers=n) for n in (1, 2))
    assert comparisons([w1, w2]) == [Comparison(Relation.SCALING, w2.id, w1.id, 0.5)]
    ps1, ps2 = (Cell(strategy="parameter_server", workers=n, ps=2) for n in (1, 2))
    other_ps = Cell(strategy="parameter_server", workers=1, ps=1)
    assert _found([other_ps, ps1, ps2]) == {(Relation.SCALING, ps2.id, ps1.id)}


def test_cross_device_ops_only_on_several_devices() -> None:
    auto2, nccl2 = (Cell(strategy="mirrored", replicas=2, cross_device_ops=o) for o in ("auto", "nccl"))
    assert _found([auto2, nccl2]) == {(Relation.CROSS_DEVICE_OPS, nccl2.id, auto2.id)}
    assert _found([nccl2]) == set()
    # on one device the option collapses: one cell, nothing to compare
    one = [Cell(strategy="mirrored", cross_device_ops=o) for o in ("auto", "nccl")]
    assert len({c.id for c in one}) == 1 and comparisons(one) == []
    ring, auto = (
        Cell(strategy="multi_worker_mirrored", workers=2, communication=o) for o in ("ring", "auto")
    )
    assert _found([ring, auto]) == {(Relation.CROSS_DEVICE_OPS, ring.id, auto.id)}
    # no option axis: central storage has nothing to compare at any device count
    assert comparisons([Cell(strategy="central_storage", replicas=2)]) == []


def test_a_cell_compared_with_the_default_option_is_compared_with_nothing_else() -> None:
    one = Cell(strategy="mirrored", replicas=1)
    auto2, hc2 = (
        Cell(strategy="mirrored", replicas=2, cross_device_ops=o) for o in ("auto", "hierarchical_copy")
    )
    plain = Cell(strategy="default")
    found = _found([plain, one, auto2, hc2])
    assert {(r, s) for r, s, _ in found if s == hc2.id} == {(Relation.CROSS_DEVICE_OPS, hc2.id)}
    assert (Relation.SCALING, auto2.id, one.id) in found and (Relation.STRATEGY, auto2.id, plain.id) in found
    # without the default option in the selection, the option's cell keeps its own comparisons
    assert (Relation.SCALING, hc2.id, one.id) in _found([plain, one, hc2])


def _model_cells(model: str) -> list[Cell]:
    return [
        Cell(model=model, strategy="default", batch=64),
        Cell(model=model, strategy="default", batch=64, loop="fit"),
        Cell(model=model, strategy="mirrored", batch=64),
        Cell(model=model, strategy="mirrored", replicas=2, batch=64),
        Cell(model=model, strategy="mirrored", replicas=2, batch=64, cross_device_ops="hierarchical_copy"),
        Cell(model=model, strategy="default", batch=64, tenants=2),
    ]


def test_headline_groups_race_each_models_contenders_and_groups_measure_the_rest() -> None:
    cells = _model_cells("cnn") + _model_cells("dense")
    contenders = {c.id for c in cells if c.tenants == 1 and c.cross_device_ops != "hierarchical_copy"}
    contenders.add(cells[-1].id)  # a co-tenant cell is no configuration to race
    heads = headline_groups(cells, contenders, max_live=8)
    assert [g.name for g in heads] == ["h0", "h1"] and all(g.race for g in heads)
    assert [[m.cell.id for m in g.members] for g in heads] == [
        [c.id for c in cells[:4]],
        [c.id for c in cells[6:10]],
    ]
    inside = {(c.relation, c.subject) for c in heads[0].comparisons}
    assert (Relation.LOOP, cells[1].id) in inside and (Relation.SCALING, cells[3].id) in inside
    rest = groups(cells, 8, heads)
    covered = {c for g in heads + rest for c in g.comparisons}
    assert covered == set(comparisons(cells))  # every comparison, once
    assert not any({c.id for c in cells[:4]} >= {m.key for m in g.members} for g in rest)
    assert not any(g.race for g in rest) and rest[0].name == "g0"


def test_contenders_past_max_live_race_in_several_groups_and_the_plan_says_so() -> None:
    """A race that does not fit max_live is split in order into races of two or more; a contender
    left alone is in none, and the plan names it for the second stage (never silently dropped)."""
    cells = _model_cells("cnn")[:4]
    ids = {c.id for c in cells}
    heads = headline_groups(cells, ids, max_live=3)
    assert [len(g.members) for g in heads] == [3] and split_race(cells, ids, heads, 3)
    left = groups(cells, 3, heads)
    assert any(cells[3].id in {m.key for m in g.members} for g in left)
    assert headline_groups(cells[:1], {cells[0].id}, max_live=3) == []  # one contender: no race
    assert [len(g.members) for g in headline_groups(cells, ids, max_live=2)] == [2, 2]
    assert not split_race(cells, ids, headline_groups(cells, ids, 8), 8)
    lines = race_lines(cells, ids, 3)
    assert lines[0].startswith("  cnn, live together (h0): ") and len(lines) == 2
    assert "then against the leader" in lines[1] and "MirroredStrategy on 2 replicas" in lines[1]


def test_precision_batch_and_steps_per_execution_have_relations_of_their_own() -> None:
    plain = Cell(strategy="default")
    bf16, b256, spe1 = (
        Cell(strategy="default", precision="mixed_bfloat16"),
        Cell(strategy="default", batch=256),
        Cell(strategy="default", steps_per_execution=1),
    )
    assert _found([plain, bf16, b256, spe1]) == {
        (Relation.PRECISION, bf16.id, plain.id),
        (Relation.BATCH, b256.id, plain.id),
        (Relation.STEPS_PER_EXECUTION, spe1.id, plain.id),
    }


def test_strategy_against_the_reference_at_the_per_replica_batch() -> None:
    plain = Cell(strategy="default", batch=64)
    one = Cell(strategy="one_device", batch=64)
    mirrored = Cell(strategy="mirrored", replicas=2, batch=64)
    strong = Cell(strategy="mirrored", replicas=2, batch=128, scaling="strong")
    cotenant = Cell(strategy="one_device", batch=64, tenants=2)
    found = _found([plain, one, mirrored, strong, cotenant])
    strategy = {(s, r) for rel, s, r in found if rel == Relation.STRATEGY}
    assert strategy == {(one.id, plain.id), (mirrored.id, plain.id), (strong.id, plain.id)}
    assert _found([one, mirrored]) == set()
    assert comparisons([plain, Cell(strategy="default", batch=64, tenants=2)]) == [
        Comparison(Relation.COTENANCY, Cell(strategy="default", tenants=2).id, plain.id)
    ]


def test_strategy_compares_like_with_like() -> None:
    plain = Cell(strategy="default", batch=64, precision="mixed_bfloat16")
    other = Cell(strategy="one_device", batch=64, precision="float32")
    assert comparisons([plain, other]) == []


@pytest.mark.parametrize(
    "axis, value, relation",
    [
        ("accum_steps", 4, Relation.ACCUMULATION),
        ("loop", "fit", Relation.LOOP),
        ("tenants", 2, Relation.COTENANCY),
        ("xla", "on", Relation.XLA),
    ],
)
def test_an_axis_against_its_default(axis: str, value: object, relation: Relation) -> None:
    base = Cell(strategy="mirrored", replicas=2)
    subject = Cell.from_dict({**base.to_dict(), axis: value})
    assert comparisons([base, subject]) == [Comparison(relation, subject.id, base.id)]
    assert comparisons([subject]) == []


def test_comparisons_are_deduplicated_and_only_among_the_cells() -> None:
    cells = [
        Cell(strategy=s, replicas=r, accum_steps=a, loop=lp)
        for s in ("default", "mirrored", "central_storage")
        for r in (1, 2)
        for a in (1, 2)
        for lp in ("ctl", "fit")
    ]
    found = comparisons(cells + cells)
    assert found == comparisons(cells)
    assert len(found) == len(set(found))
    ids = {c.id for c in cells}
    assert all(c.subject in ids and c.reference in ids and c.subject != c.reference for c in found)
    assert {c.relation for c in found} == {
        Relation.SCALING,
        Relation.STRATEGY,
        Relation.ACCUMULATION,
        Relation.LOOP,
    }


# --------------------------------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------------------------------


def test_a_small_run_is_one_group() -> None:
    """`--model cnn --strategy default,mirrored --replicas 1,2 --batch 64`."""
    cells = [
        Cell(model="cnn", strategy=s, replicas=r, batch=64) for s in ("default", "mirrored") for r in (1, 2)
    ]
    plan = _check_plan(cells, max_live=3)
    assert len(plan) == 1 and len(plan[0].members) == 3 and plan[0].live == 3
    assert {c.relation for c in plan[0].comparisons} == {Relation.STRATEGY, Relation.SCALING}
    assert len(plan[0].comparisons) == 3
    assert plan[0].member(cells[0].id).cell == cells[0]
    with pytest.raises(KeyError):
        plan[0].member("nothing")


def test_max_live_forces_a_split_with_few_repeats() -> None:
    """r1 is the baseline of six cells; a group of three holds it and two of them: three groups,
    r1 measured thrice and nothing else twice (the least possible)."""
    cells = [Cell(strategy="mirrored")] + [
        Cell(strategy="mirrored", replicas=r, cross_device_ops=o) for r in (2, 4, 8) for o in ("auto", "nccl")
    ]
    plan = _check_plan(cells, max_live=3)
    assert len(plan) == 3 and _repeats(plan) == 2
    assert all(g.members[0].cell == cells[0] for g in plan)
    assert len(_check_plan(cells, max_live=7)) == 1


@pytest.mark.parametrize("max_live", [2, 3, 4, 5, 8])
@pytest.mark.parametrize(
    "cells",
    [
        [
            Cell(strategy="multi_worker_mirrored", workers=w, communication=o)
            for w in (1, 2, 3)
            for o in ("auto", "ring")
        ]
        + [Cell(strategy="default")],
        [Cell(strategy="parameter_server", workers=w, ps=p) for w in (1, 2) for p in (1, 2)]
        + [Cell(strategy="default"), Cell(strategy="mirrored", replicas=2)],
        [
            Cell(strategy=s, replicas=r, tenants=t)
            for s in ("default", "mirrored")
            for r in (1, 2)
            for t in (1, 2, 3)
        ],
        [
            Cell(strategy=s, replicas=r, accum_steps=a, loop=lp, batch=b)
            for s in ("default", "mirrored", "one_device")
            for r in (1, 2, 4)
            for a in (1, 2)
            for lp in ("ctl", "fit")
            for b in (32, 64)
        ],
    ],
    ids=["multi-worker", "parameter-server", "co-tenants", "grid"],
)
def test_groups_cover_every_comparison_within_max_live(cells: list[Cell], max_live: int) -> None:
    plan = _check_plan(cells, max_live)
    assert plan == groups(list(cells), max_live)  # deterministic


def test_unmeasurable_comparisons_leave_their_cells_alone() -> None:
    small = Cell(strategy="parameter_server", workers=1, ps=1)  # 3 processes
    large = Cell(strategy="parameter_server", workers=2, ps=1)  # 4 processes
    plain = Cell(strategy="default")
    assert unmeasurable([small, large, plain], max_live=6) == [
        Comparison(Relation.SCALING, large.id, small.id, 0.5)
    ]
    plan = _check_plan([small, large, plain], max_live=6)
    assert [[m.cell for m in g.members] for g in plan] == [[small, plain], [large, plain]]
    huge = Cell(strategy="multi_worker_mirrored", workers=8)
    plan = _check_plan([huge, plain], max_live=4)
    assert [[m.cell for m in g.members] for g in plan] == [[huge], [plain]]
    assert plan[0].live == 8 and plan[0].comparisons == ()


def test_a_cell_in_no_comparison_has_a_group_of_its_own() -> None:
    pair = [Cell(strategy="mirrored"), Cell(strategy="mirrored", replicas=2)]
    loner = Cell(strategy="central_storage", replicas=2, batch=32)
    plan = _check_plan([*pair, loner], max_live=8)
    assert [len(g.members) for g in plan] == [2, 1] and plan[1].members == (Member(loner),)


def test_max_live_must_be_positive() -> None:
    with pytest.raises(HarnessError, match="max_live"):
        groups([Cell()], 0)


def test_default_max_live_from_memory() -> None:
    gib = 2**30
    assert default_max_live(0) == 2
    assert default_max_live(8 * gib, 700 * 2**20) == 5  # floor(0.5 * 8192 / 700)
    assert default_max_live(1024 * gib) == MAX_LIVE_CAP
    assert default_max_live(4 * PROCESS_BYTES) == 2
    with pytest.raises(HarnessError):
        default_max_live(gib, 0)


# --------------------------------------------------------------------------------------------------
# Second stage, ab, turns
# --------------------------------------------------------------------------------------------------


def test_race_groups_hold_the_fastest_and_as_many_contenders_as_fit() -> None:
    fastest = Cell(strategy="mirrored", replicas=2)
    contenders = [Cell(strategy="mirrored", replicas=2, batch=b) for b in (16, 32, 128, 256, 512)]
    plan = race_groups([*contenders, fastest], fastest, max_live=3)
    assert [g.name for g in plan] == ["r0", "r1", "r2"]
    assert [len(g.members) for g in plan] == [3, 3, 2]
    assert all(g.members[0].cell == fastest and g.live <= 3 for g in plan)
    compared = [c for g in plan for c in g.comparisons]
    assert compared == [Comparison(Relation.FASTEST, c.id, fastest.id) for c in contenders]


def test_race_groups_leave_a_contender_too_large_alone() -> None:
    fastest = Cell(strategy="multi_worker_mirrored", workers=3)
    large = Cell(strategy="multi_worker_mirrored", workers=4)
    small = Cell(strategy="mirrored", replicas=2)
    plan = race_groups([large, small], fastest, max_live=5)
    assert [[m.cell for m in g.members] for g in plan] == [[fastest, small], [large]]
    assert plan[1].comparisons == ()
    assert [[m.cell for m in g.members] for g in race_groups([], fastest, 5)] == [[fastest]]


def test_ab_group_compares_b_against_a() -> None:
    cell = Cell(strategy="multi_worker_mirrored", workers=2)
    group = ab_group(cell)
    assert [m.key for m in group.members] == [f"A:{cell.id}", f"B:{cell.id}"]
    assert group.comparisons == (Comparison(Relation.AB, f"B:{cell.id}", f"A:{cell.id}"),)
    assert group.live == 4 and group.member(f"B:{cell.id}").side == "B"


def test_turn_order_two_members_abba_then_baab() -> None:
    assert turn_order(2, 0, seed=7) == [0, 1, 1, 0]
    assert turn_order(2, 1, seed=7) == [1, 0, 0, 1]
    assert turn_order(2, 2, seed=0) == [0, 1, 1, 0]
    assert turn_order(1, 3, seed=7) == [0, 0]


@pytest.mark.parametrize("members", [3, 4, 7])
def test_turn_order_is_balanced_and_seeded(members: int) -> None:
    orders = [turn_order(members, block, seed=11) for block in range(20)]
    for order in orders:
        assert Counter(order) == dict.fromkeys(range(members), 2)
        assert order == order[::-1]
        # each member's two turns average to the block's middle
        assert all(sum(i for i, m in enumerate(order) if m == k) == len(order) - 1 for k in range(members))
    assert orders == [turn_order(members, block, seed=11) for block in range(20)]
    assert len({tuple(o) for o in orders}) > 1
    assert orders != [turn_order(members, block, seed=12) for block in range(20)]


def test_turn_order_rejects_bad_input() -> None:
    with pytest.raises(HarnessError, match="members"):
        turn_order(0, 0, seed=0)
    with pytest.raises(HarnessError, match="block"):
        turn_order(2, -1, seed=0)
