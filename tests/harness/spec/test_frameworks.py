"""Co-tenants from another framework, on the spec side: the axis, the cell id, the rules, the keys
and the comparisons of a member with such a co-tenant."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.spec.cell import Cell
from harness.spec.frameworks import FRAMEWORKS, framework, member_of, tenant_key, together_key
from harness.spec.groups import Member, Relation, comparisons, groups, shared_comparisons
from harness.spec.protocol import Platform
from harness.spec.rules import unsupported_reason

WITH_JAX = Platform(frameworks=("jax",))


def test_the_axis_takes_none_and_each_framework_and_names_them_on_a_bad_value():
    for name in ("none", *FRAMEWORKS):
        assert Cell(strategy="default", tenant_framework=name).tenant_framework == name
    with pytest.raises(HarnessError, match=r"'tensorflow'.*none, jax, torch"):
        Cell(strategy="default", tenant_framework="tensorflow")


def test_the_cell_id_names_the_framework_and_old_ids_stay():
    assert "/r1w1+jax/" in Cell(strategy="default", tenant_framework="jax").id
    assert Cell(strategy="default").id == "cnn/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak"
    assert Cell.from_dict({"strategy": "default"}).tenant_framework == "none"


def test_multi_worker_strategies_collapse_the_axis():
    cell = Cell(strategy="multi_worker_mirrored", workers=2, tenant_framework="jax")
    assert cell.tenant_framework == "none"


def test_a_missing_framework_is_unsupported_with_what_to_install():
    reason = unsupported_reason(Cell(strategy="default", tenant_framework="torch"), WITH_JAX)
    assert (
        reason is not None and "PyTorch is not installed" in reason and "pip install -e '.[torch]'" in reason
    )


@pytest.mark.parametrize(
    "cell, words",
    [
        (Cell(model="resnet50", strategy="default", tenant_framework="jax"), "written for cnn, dense"),
        (Cell(strategy="default", tenants=2, tenant_framework="jax"), "tenants 1"),
        (Cell(strategy="default", data="mnist", tenant_framework="jax"), "synthetic"),
    ],
)
def test_what_the_co_tenant_cannot_run_is_unsupported(cell, words):
    reason = unsupported_reason(cell, WITH_JAX)
    assert reason is not None and words in reason


def test_an_installed_framework_runs():
    assert unsupported_reason(Cell(strategy="mirrored", replicas=2, tenant_framework="jax"), WITH_JAX) is None


def test_keys_and_their_member():
    key = Cell(strategy="default", tenant_framework="jax").id
    assert member_of(key) == key
    assert member_of(tenant_key(key, "jax")) == key
    assert member_of(together_key(key)) == key
    assert member_of(together_key(tenant_key(key, "jax"))) == key
    assert member_of("A:" + key) == "A:" + key


def test_every_framework_sets_gpu_memory_so_both_fit():
    assert framework("jax").env()["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "PYTORCH_CUDA_ALLOC_CONF" in framework("torch").env()
    with pytest.raises(KeyError, match="expected one of: jax, torch"):
        framework("mxnet")


def test_a_member_with_a_co_tenant_holds_two_processes_and_two_shared_comparisons():
    member = Member(Cell(strategy="default", tenant_framework="jax"))
    assert member.live == 2
    ours, theirs = shared_comparisons(member)
    assert (ours.relation, ours.subject, ours.reference) == (
        Relation.SHARED,
        together_key(member.key),
        member.key,
    )
    tenant = tenant_key(member.key, "jax")
    assert (theirs.subject, theirs.reference) == (together_key(tenant), tenant)
    assert shared_comparisons(Member(Cell(strategy="default"))) == ()


def test_a_co_tenant_cell_is_compared_only_inside_its_own_group():
    alone = Cell(strategy="default")
    shared = Cell(strategy="default", tenant_framework="jax")
    mirrored = Cell(strategy="mirrored", replicas=2, tenant_framework="jax")
    assert comparisons([alone, shared, mirrored]) == []
    found = groups([alone, shared, mirrored], max_live=8)
    by_member = {g.members[0].cell.id: g for g in found}
    assert len(found) == 3 and all(len(g.members) == 1 for g in found)
    assert [c.relation for c in by_member[shared.id].comparisons] == [Relation.SHARED, Relation.SHARED]
    assert by_member[alone.id].comparisons == ()
