"""One descriptor per strategy: tasks and roles, synchronous updates, axes, loops, precisions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.spec import strategies
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.spec.rules import unsupported_reason
from harness.spec.strategies import (
    ALLREDUCE_STRATEGIES,
    MULTI_WORKER_STRATEGIES,
    NO_OPTION,
    SINGLE_PROCESS_STRATEGIES,
    STRATEGIES,
    STRATEGY_NAMES,
    Role,
    Variables,
    cluster_strategy,
    only_strategy,
    strategies_where,
)


def test_single_process_strategies_run_as_one_chief() -> None:
    for name in SINGLE_PROCESS_STRATEGIES:
        cell = Cell(strategy=name, replicas=2)
        assert [(t.role, t.type) for t in cell.tasks] == [(Role.CHIEF, "local")]
        assert cell.processes == 1 and STRATEGIES[name].synchronous


def test_multi_worker_layouts_and_roles() -> None:
    mwms = Cell(strategy="multi_worker_mirrored", workers=3)
    assert [t.role for t in mwms.tasks] == [Role.CHIEF, Role.PEER, Role.PEER]
    assert mwms.replicas_in_sync == 3 and mwms.effective_batch == 3 * 64
    ps = Cell(strategy="parameter_server", workers=2, ps=2, accum_steps=2)
    assert [(t.type, t.role) for t in ps.tasks] == [
        ("chief", Role.CHIEF),
        ("worker", Role.SERVER),
        ("worker", Role.SERVER),
        ("ps", Role.SERVER),
        ("ps", Role.SERVER),
    ]
    assert ps.processes == 5 and ps.replicas_in_sync == 1 and ps.effective_batch == 64 * 2
    assert set(MULTI_WORKER_STRATEGIES) == {"multi_worker_mirrored", "parameter_server"}


def test_synchronous_and_checks() -> None:
    ps = STRATEGIES["parameter_server"]
    assert not ps.synchronous
    assert ps.synchronous_at(1) and not ps.synchronous_at(2)
    assert "chief" not in ps.training_tasks
    assert STRATEGIES["mirrored"].synchronous and STRATEGIES["mirrored"].synchronous_at(4)
    assert STRATEGIES["central_storage"].variables == Variables.AGGREGATING
    assert STRATEGIES["parameter_server"].variables == Variables.ON_PS


def test_axes_apply_where_the_descriptors_say() -> None:
    assert AXIS_BY_NAME["cross_device_ops"].applies_to == ("mirrored",)
    assert AXIS_BY_NAME["communication"].applies_to == ("multi_worker_mirrored",)
    assert AXIS_BY_NAME["ps"].applies_to == ("parameter_server",)
    assert set(AXIS_BY_NAME["replicas"].applies_to) == {
        "mirrored",
        "central_storage",
        "multi_worker_mirrored",
        "parameter_server",
    }
    assert AXIS_BY_NAME["tenants"].applies_to == SINGLE_PROCESS_STRATEGIES


@pytest.mark.parametrize(
    "name,loop,precision,needle",
    [
        ("multi_worker_mirrored", "fit", "float32", "keras#20585"),
        ("parameter_server", "fit", "float32", "keras#18624"),
        ("central_storage", "ctl", "mixed_float16", "loss-scale optimizer"),
    ],
)
def test_unsupported_loops_and_precisions_come_from_the_descriptor(
    name: str, loop: str, precision: str, needle: str
) -> None:
    cell = Cell(strategy=name, loop=loop, precision=precision, replicas=1)
    assert needle in (unsupported_reason(cell, Platform("cpu", 0, 2)) or "")


def test_a_cluster_runs_the_strategy_its_task_types_allow() -> None:
    assert cluster_strategy(("chief", "worker", "ps")).name == "parameter_server"
    assert cluster_strategy(("worker",)).name == "multi_worker_mirrored"
    assert cluster_strategy(("chief", "worker")).name == "multi_worker_mirrored"


def test_option_axis_value_of_a_cell_and_a_row() -> None:
    assert Cell(strategy="mirrored", replicas=2, cross_device_ops="nccl").option == "nccl"
    assert Cell(strategy="multi_worker_mirrored", workers=2, communication="ring").option == "ring"
    assert Cell(strategy="mirrored", replicas=1, cross_device_ops="nccl").option == NO_OPTION
    assert Cell(strategy="central_storage", replicas=2).option == NO_OPTION
    row = {"strategy": "multi_worker_mirrored", "cross_device_ops": "none", "communication": "ring"}
    assert STRATEGIES["multi_worker_mirrored"].option_in(row) == "ring"
    assert STRATEGIES["parameter_server"].option_in(row) == NO_OPTION


def test_predict_option_is_a_value_of_the_option_axis() -> None:
    for s in STRATEGIES.values():
        assert (s.predict_option is None) == (s.option_axis is None), s.name
        if s.option_axis:
            assert s.predict_option in AXIS_BY_NAME[s.option_axis].choices
    assert STRATEGIES["mirrored"].predict_option == "auto"
    assert STRATEGIES["multi_worker_mirrored"].predict_option == "ring"


def test_the_default_strategy_is_the_one_reference() -> None:
    assert only_strategy(lambda s: s.reference).name == "default"


def test_strategies_with_an_allreduce_option() -> None:
    assert ALLREDUCE_STRATEGIES == ("mirrored", "multi_worker_mirrored")


def test_mirrored_variables() -> None:
    assert strategies_where(lambda s: s.variables == Variables.MIRRORED) == (
        "mirrored",
        "multi_worker_mirrored",
    )


def test_the_axis_that_adds_devices() -> None:
    axes = {n: s.device_axis for n, s in STRATEGIES.items()}
    assert axes == {
        "default": None,
        "one_device": None,
        "mirrored": "replicas",
        "central_storage": "replicas",
        "multi_worker_mirrored": "workers",
        "parameter_server": "workers",
    }


def test_only_strategy_wants_exactly_one() -> None:
    assert only_strategy(lambda s: s.ps_tasks).name == "parameter_server"
    with pytest.raises(ValueError, match="2 do"):
        only_strategy(lambda s: s.multi_worker)


_NAME = "|".join(re.escape(n) for n in STRATEGY_NAMES)
_QUOTED = rf"""["'](?:{_NAME})["']"""
NAME_COMPARISON = re.compile(
    rf"(?:==|!=)\s*{_QUOTED}"  # x == "mirrored"
    rf"|{_QUOTED}\s*(?:==|!=)"  # "mirrored" != x
    rf"|\bin\s*[(\[{{][^)\]}}]*{_QUOTED}"  # x in ("mirrored", ...), x not in [...]
    rf"|\.isin\(\s*[(\[{{][^)\]}}]*{_QUOTED}"  # frame["strategy"].isin(["mirrored"])
    rf"|\bcase\s+{_QUOTED}"
)  # match/case
"""A comparison against a strategy's name literal. Names as data (a registry keyed by name, a sweep's
strategy tuple, a default value) are not comparisons and do not match."""

DESCRIPTORS = Path(strategies.__file__).resolve()


def _name_comparisons(text: str) -> list[str]:
    return [m.group(0) for m in NAME_COMPARISON.finditer(text)]


def test_the_pattern_finds_name_comparisons() -> None:
    for code in (
        'if cell.strategy == "mirrored":',
        "x = s != 'default'",
        'if r["strategy"] not in ("mirrored",\n    "multi_worker_mirrored"):',
        'ok[ok["strategy"].isin(["mirrored"])]',
        '    case "parameter_server":',
    ):
        assert _name_comparisons(code), code
    for code in (
        'REGISTRY = {"mirrored": build}',
        'Cell(strategy="mirrored")',
        'strategy=("default", "mirrored")',
        "if name in STRATEGIES:",
    ):
        assert not _name_comparisons(code), code


def test_no_module_compares_strategy_names() -> None:
    """Strategy-specific behaviour goes through the descriptors (harness/spec/strategies.py)."""
    root = DESCRIPTORS.parents[1]
    found = [
        f"{path.relative_to(root.parent)}: {hit}"
        for path in sorted(root.rglob("*.py"))
        if path.resolve() != DESCRIPTORS
        for hit in _name_comparisons(path.read_text())
    ]
    assert not found, "compare a descriptor field instead of the name:\n" + "\n".join(found)
