"""Tests of harness.results.aggregate: a cell's row from its processes (the figure, its CI, the
facts they agree on), co-tenants combined, and the rows of cells with no figures. No TensorFlow."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.contract.columns import Estimate, flatten
from harness.contract.records import Breakdown, Status
from harness.formulas import stats
from harness.launch.cells.runner import plan
from harness.results.aggregate import ProcessResult, aggregate, combine, not_measured_row
from harness.results.measurement import cell_row
from harness.results.store import TABLES
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from tests.harness.results.test_measurement import FIGURE_COLUMNS, PROTOCOL

DEFAULT = Cell(strategy="default", batch=10)


def _process(eps, status=Status.OK, k=0, reason="", cell=DEFAULT, breakdown=None):
    base = cell_row(cell, PROTOCOL)
    return ProcessResult(
        replace(
            base,
            status=status,
            reason=reason,
            examples_per_sec=Estimate(eps),
            spread=replace(base.spread, cv_within_process=0.01),
            timing=replace(base.timing, startup_s=1.0 + k, compile_s=2.0),
            breakdown=breakdown or base.breakdown,
        ),
        [],
        k,
        wall_s=5.0,
        launch_s=3.0,
    )


def test_aggregate_over_processes():
    cell = Cell(strategy="default", batch=10)
    out = aggregate(
        cell,
        PROTOCOL,
        [_process(100.0, k=0, cell=cell), _process(90.0, k=1, cell=cell), _process(120.0, k=2, cell=cell)],
    )
    est = stats.figure([100.0, 90.0, 120.0])
    assert out.examples_per_sec.value == 100.0 and out.spread.processes == 3
    assert out.spread.process_examples_per_sec == [100.0, 90.0, 120.0]
    assert out.examples_per_sec.low == pytest.approx(est.low)
    assert out.examples_per_sec.high == pytest.approx(est.high)
    assert out.spread.cv_between_processes == pytest.approx(stats.cv([100.0, 90.0, 120.0]))
    assert out.spread.cv_within_process == 0.01
    assert out.timing.startup_s == 2.0 and out.timing.wall_s == 15.0
    assert out.spread.unstable is True  # cv 0.15 > 0.10
    assert out.updates.optimizer_updates_per_sec == 10.0


def test_aggregate_gives_the_median_parts_and_the_verdict():
    cell = Cell(strategy="mirrored", replicas=2, batch=10)  # effective batch 20
    parts = Breakdown(parts_step_s=0.25, compute_s=0.15, allreduce_s=0.05, input_s=0.01, dispatch_s=0.001)
    procs = [
        _process(eps, k=k, cell=cell, breakdown=parts if k == 0 else None)
        for k, eps in enumerate((100.0, 90.0, 120.0))
    ]
    out = aggregate(cell, PROTOCOL, procs).breakdown  # only the first pass measured the parts
    assert out.compute_s == 0.15 and out.allreduce_s == 0.05 and out.parts_step_s == 0.25
    assert out.step_s == pytest.approx(0.2)  # 20 examples / 100 examples/s
    # shares of the step timed with the parts, in the same process
    assert out.overlap == pytest.approx((0.211 - 0.25) / 0.25)
    assert out.bound == "compute" and out.bound_reason is not None and "compute 60%" in out.bound_reason


def test_a_breakdown_measured_apart_replaces_the_processes_own() -> None:
    cell = Cell(strategy="mirrored", replicas=2, batch=10)
    apart = Breakdown(parts_step_s=0.25, compute_s=0.2, allreduce_s=0.02, input_s=0.01, dispatch_s=0.001)
    out = aggregate(cell, PROTOCOL, [_process(100.0, k=k, cell=cell) for k in range(3)], apart).breakdown
    assert out.compute_s == 0.2 and out.step_s == pytest.approx(0.2)  # the step from the turns' figure
    assert out.bound == "compute"
    failed = Breakdown(bound_reason="step breakdown not measured: its process failed: OOM")
    out = aggregate(cell, PROTOCOL, [_process(100.0, cell=cell)], failed).breakdown
    assert out.bound is None and out.bound_reason == failed.bound_reason


def test_aggregate_one_process_has_no_ci():
    cell = Cell(strategy="default")
    out = aggregate(cell, PROTOCOL, [_process(100.0, cell=cell)])
    assert out.examples_per_sec.value == 100.0 and out.examples_per_sec.low is None
    assert out.spread.unstable is False


def test_a_failed_process_decides_the_row_without_figures():
    cell = Cell(strategy="default")
    out = aggregate(
        cell,
        PROTOCOL,
        [_process(100.0, cell=cell), _process(None, Status.FAILED, 1, "killed by SIGKILL", cell=cell)],
    )
    assert out.status == Status.FAILED and out.reason == "pass 2 of 2: killed by SIGKILL"
    cols = flatten(out)
    assert all(cols[k] is None for k in FIGURE_COLUMNS)


_MISSING = object()


def _with_jit(result: ProcessResult, jit) -> ProcessResult:
    if jit is _MISSING:
        return result
    return replace(result, row=replace(result.row, ran=replace(result.row.ran, jit_compile=jit)))


@pytest.mark.parametrize(
    "reported, expected",
    [
        ((True, True), True),
        ((False, False, False), False),
        ((False, True), None),  # the processes disagree: null, not a crash
        ((_MISSING, _MISSING), None),  # rows from an older suite's journal or events: no fact
        ((False, _MISSING), False),  # one process reported nothing
    ],
)
def test_the_cell_row_gives_the_jit_compile_its_processes_agree_on(reported, expected):
    cell = Cell(strategy="default", batch=10)
    procs = [_with_jit(_process(100.0 + k, k=k, cell=cell), jit) for k, jit in enumerate(reported)]
    out = aggregate(cell, PROTOCOL, procs)
    assert out.status == Status.OK and out.ran.jit_compile is expected
    failed = aggregate(cell, PROTOCOL, [*procs, _process(None, Status.FAILED, k=len(procs), cell=cell)])
    assert failed.status == Status.FAILED and failed.ran.jit_compile is expected


def test_co_tenants_that_disagree_on_jit_compile_give_null():
    windows = [[{"start_s": 0.0, "window_s": 1.0, "examples": 100}] for _ in range(2)]
    base = cell_row(Cell(strategy="default", tenants=2), PROTOCOL)
    rows = [
        replace(
            base,
            status=Status.OK,
            spread=replace(base.spread, cv_within_process=0.0),
            ran=replace(base.ran, jit_compile=jit),
        )
        for jit in (True, False)
    ]
    assert combine(rows, windows, 10)[0].ran.jit_compile is None
    same = [replace(r, ran=replace(r.ran, jit_compile=True)) for r in rows]
    assert combine(same, windows, 10)[0].ran.jit_compile is True


def test_not_measured_row():
    cell = Cell(cross_device_ops="nccl", replicas=2)
    r = not_measured_row(cell, PROTOCOL, Status.UNSUPPORTED, "no CPU kernel", None)
    assert set(flatten(r)) <= set(TABLES["cells"].schema.names)
    assert r.status == "unsupported" and r.reason == "no CPU kernel"
    assert r.cell.cell_id == cell.id and r.examples_per_sec == Estimate()
    assert flatten(r)["examples_per_sec"] is None and r.machine is None


def test_plan_marks_unsupported():
    cells = [Cell(), Cell(cross_device_ops="nccl", replicas=2), Cell(replicas=3)]
    planned = plan(cells, Platform())
    assert [c for c, _ in planned] == cells
    assert planned[0][1] is None
    assert "NcclAllReduce" in planned[1][1]
    assert "3 replicas" in planned[2][1]
