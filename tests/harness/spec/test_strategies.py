"""One descriptor per strategy: tasks and roles, synchronous updates, axes, loops, precisions."""

from __future__ import annotations

import pytest

from harness.spec.axes import AXIS_BY_NAME
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.spec.rules import unsupported_reason
from harness.spec.strategies import (
    MULTI_WORKER_STRATEGIES,
    SINGLE_PROCESS_STRATEGIES,
    STRATEGIES,
    Role,
    Variables,
    cluster_strategy,
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
        ("chief", Role.CHIEF), ("worker", Role.SERVER), ("worker", Role.SERVER),
        ("ps", Role.SERVER), ("ps", Role.SERVER)]
    assert ps.processes == 5 and ps.replicas_in_sync == 1 and ps.effective_batch == 64 * 2
    assert set(MULTI_WORKER_STRATEGIES) == {"multi_worker_mirrored", "parameter_server"}


def test_synchronous_and_checks() -> None:
    ps = STRATEGIES["parameter_server"]
    assert not ps.synchronous and ps.coordinated and not ps.allreduce_check
    assert ps.synchronous_at(1) and not ps.synchronous_at(2)
    assert not ps.chief_trains and STRATEGIES["multi_worker_mirrored"].chief_trains
    assert STRATEGIES["mirrored"].allreduce_check and STRATEGIES["mirrored"].synchronous_at(4)
    assert STRATEGIES["central_storage"].variables == Variables.AGGREGATING
    assert STRATEGIES["parameter_server"].variables == Variables.ON_PS


def test_axes_apply_where_the_descriptors_say() -> None:
    assert AXIS_BY_NAME["cross_device_ops"].applies_to == ("mirrored",)
    assert AXIS_BY_NAME["communication"].applies_to == ("multi_worker_mirrored",)
    assert AXIS_BY_NAME["ps"].applies_to == ("parameter_server",)
    assert set(AXIS_BY_NAME["replicas"].applies_to) == {
        "mirrored", "central_storage", "multi_worker_mirrored", "parameter_server"}
    assert AXIS_BY_NAME["tenants"].applies_to == SINGLE_PROCESS_STRATEGIES


@pytest.mark.parametrize("name,loop,precision,needle", [
    ("multi_worker_mirrored", "fit", "float32", "keras#20585"),
    ("parameter_server", "fit", "float32", "keras#18624"),
    ("central_storage", "ctl", "mixed_float16", "loss-scale optimizer"),
])
def test_unsupported_loops_and_precisions_come_from_the_descriptor(name: str, loop: str,
                                                                   precision: str, needle: str) -> None:
    cell = Cell(strategy=name, loop=loop, precision=precision, replicas=1)
    assert needle in (unsupported_reason(cell, Platform("cpu", 0, 2)) or "")


def test_a_cluster_runs_the_strategy_its_task_types_allow() -> None:
    assert cluster_strategy(("chief", "worker", "ps")).name == "parameter_server"
    assert cluster_strategy(("worker",)).name == "multi_worker_mirrored"
    assert cluster_strategy(("chief", "worker")).name == "multi_worker_mirrored"
