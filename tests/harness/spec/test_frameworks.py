"""Co-tenants from another framework, on the spec side: the axis, the cell id, the rules, the keys
and the comparisons of a member with such a co-tenant."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.spec.cell import Cell
from harness.spec.frameworks import (
    FRAMEWORKS,
    framework,
    member_of,
    path_without,
    release,
    tenant_key,
    together_key,
)
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
    assert framework("jax").env("0.11.0")["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "PYTORCH_CUDA_ALLOC_CONF" in framework("torch").env("2.9.0+cu130")
    with pytest.raises(KeyError, match="expected one of: jax, torch"):
        framework("mxnet")


@pytest.mark.parametrize(
    "version, found",
    [
        ("0.4.32", (0, 4, 32)),
        ("2.9.0+cu130", (2, 9, 0)),
        ("0.5.0.dev20250101", (0, 5, 0)),
        (" 2.1 ", (2, 1)),
        ("", None),
        ("unknown", None),
    ],
)
def test_a_version_string_gives_its_release_numbers(version, found):
    assert release(version) == found


JAX_MEMORY = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")


@pytest.mark.parametrize(
    "name, version, memory",
    [
        # jaxlib 0.4.32 is the first that reads XLA_CLIENT_MEM_FRACTION; every one refuses both names
        ("jax", "0.4.20", {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.45"}),
        ("jax", "0.4.31", {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.45"}),
        ("jax", "0.4.32", {"XLA_CLIENT_MEM_FRACTION": "0.45"}),
        ("jax", "0.10.2", {"XLA_CLIENT_MEM_FRACTION": "0.45"}),
        ("jax", "0.11.0", {"XLA_CLIENT_MEM_FRACTION": "0.45"}),
        ("jax", "", {"XLA_CLIENT_MEM_FRACTION": "0.45"}),  # unreadable: the newest
        # expandable_segments came in PyTorch 2.1 (2.0 refuses the option)
        ("torch", "2.0.1", {}),
        ("torch", "2.1.0", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
        ("torch", "2.14.1+cpu", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ],
)
def test_each_release_gets_the_memory_variables_it_accepts(name, version, memory):
    env = framework(name).env(version)
    assert {k: v for k, v in env.items() if "MEM_FRACTION" in k or "ALLOC_CONF" in k} == memory
    assert not set(memory) & set(framework(name).removed(version))


def _jaxlib_plugin_options(env: dict[str, str], reads_new_name: bool) -> str:
    """A fake jaxlib's reading of the memory fraction, as jaxlib's generate_pjrt_gpu_plugin_options
    does it: from 0.4.32 it refuses both names together (and JAX then falls back to the CPU)."""
    old = env.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "")
    if not reads_new_name:
        return old
    new = env.get("XLA_CLIENT_MEM_FRACTION", "")
    if old and new:
        raise ValueError("XLA_CLIENT_MEM_FRACTION is specified together with XLA_PYTHON_CLIENT_MEM_FRACTION.")
    return new or old


@pytest.mark.parametrize("version", ["0.4.31", "0.4.32", "0.11.0"])
def test_a_jax_that_refuses_both_names_gets_one_even_when_both_are_exported(version):
    jax = framework("jax")
    inherited = {"PATH": "/usr/bin", **dict.fromkeys(JAX_MEMORY, "0.9")}  # a user exported both
    tenant = jax.process_env(version, inherited)
    child = {k: v for k, v in {**inherited, **tenant.variables}.items() if k not in tenant.removed}
    assert len(set(child) & set(JAX_MEMORY)) == 1
    assert _jaxlib_plugin_options(child, reads_new_name=release(version) >= (0, 4, 32)) == "0.45"


def test_the_jax_co_tenant_does_not_inherit_tensorflows_xla_flags_nor_its_ptxas():
    site = "/tmp/tfsb-site/nvidia/cuda_nvcc"
    inherited = {
        "XLA_FLAGS": f"--xla_gpu_cuda_data_dir={site} --xla_gpu_autotune_level=0",
        "PATH": f"{site}/bin:/usr/local/bin:{site}-other/bin:/usr/bin",
    }
    tenant = framework("jax").process_env("0.11.0", inherited)
    assert "XLA_FLAGS" in tenant.removed
    assert tenant.variables["PATH"] == f"/usr/local/bin:{site}-other/bin:/usr/bin"
    # without TensorFlow's CUDA directory, PATH stays the parent's (not set at all)
    assert "PATH" not in framework("jax").process_env("0.11.0", {"PATH": "/usr/bin"}).variables
    assert "XLA_FLAGS" not in framework("torch").process_env("2.9.0", inherited).removed


def test_a_path_loses_only_the_entries_inside_the_roots():
    assert path_without("/a/b:/a/bc:/a/b/bin:/c", ["/a/b/"]) == "/a/bc:/c"
    assert path_without("/a:/b", []) == "/a:/b"


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
