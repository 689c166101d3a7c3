"""The step-time breakdown's derived figures and the verdict rules, on planted breakdowns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.contract.columns import Estimate
from harness.contract.records import Breakdown, CellRow, Status
from harness.formulas.breakdown import BOUNDS, NOISE, derived, excess, parts_of, reference_step, verdict
from harness.results.measurement import cell_row
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol

STEP = 0.010  # s per update


def _row(cell: Cell, status: Status, eps: float | None, breakdown: Breakdown) -> CellRow:
    return replace(
        cell_row(cell, Protocol()), status=status, examples_per_sec=Estimate(eps), breakdown=breakdown
    )


@pytest.mark.parametrize(
    "parts, bound, knob",
    [
        (
            {"compute_s": 0.008, "allreduce_s": 0.001, "input_s": 0.0005, "dispatch_s": 0.0001},
            "compute",
            "precision",
        ),
        (
            {"compute_s": 0.003, "allreduce_s": 0.006, "input_s": 0.0005, "dispatch_s": 0.0001},
            "communication",
            "accumulation",
        ),
        (
            {"compute_s": 0.002, "allreduce_s": 0.001, "input_s": 0.007, "dispatch_s": 0.0001},
            "input",
            "prefetch",
        ),
        (
            {"compute_s": 0.001, "allreduce_s": 0.0, "input_s": 0.0005, "dispatch_s": 0.008},
            "dispatch",
            "steps_per_execution",
        ),
    ],
)
def test_the_largest_share_decides_and_names_its_knob(parts: dict[str, float], bound: str, knob: str) -> None:
    name, reason = verdict(STEP, parts)
    assert name == bound
    assert reason.startswith(f"{bound}-bound: of the 10 ms step")
    assert knob in reason
    for b in BOUNDS:  # every share is listed
        assert f"{b.name} {parts[b.part] / STEP:.0%}" in reason


def test_a_step_mostly_unexplained_by_its_parts_is_bound_by_none() -> None:
    # compute 30%, input 20%: half the step is unexplained, more than any part takes
    parts = {"compute_s": 0.003, "allreduce_s": 0.0, "input_s": 0.002, "dispatch_s": 0.0}
    bound, reason = verdict(STEP, parts)
    assert bound is None
    assert reason == (
        "no part bounds it: more of the step is unexplained than any part takes; of the 10 ms step, "
        "compute 30%, communication 0%, input 20%, dispatch 0%, unexplained 50%"
    )
    # compute 52% against 34% unexplained: compute explains the step, and the share says the rest
    parts = {"compute_s": 0.0052, "allreduce_s": 0.0, "input_s": 0.0011, "dispatch_s": 0.0003}
    bound, reason = verdict(STEP, parts)
    assert bound == "compute" and ", unexplained 34%; try " in reason and "overlap" not in reason
    # compute 35%, input 28%, 23% unexplained: the largest part takes less than half the step
    parts = {"compute_s": 0.0035, "allreduce_s": 0.0013, "input_s": 0.0028, "dispatch_s": 0.0001}
    bound, reason = verdict(STEP, parts)
    assert bound is None and reason.startswith(
        "no part bounds it: the largest, compute, takes less than half"
    )
    # parts that overlap inside the step: the overlap, as before
    parts = {"compute_s": 0.009, "allreduce_s": 0.0, "input_s": 0.002, "dispatch_s": 0.0}
    assert verdict(STEP, parts)[1].startswith(
        "compute-bound: of the 10 ms step, compute 90%, communication 0%, input 20%, dispatch 0% (overlap +10%); try "
    )


def test_derived_gives_step_overlap_and_bound_against_the_step_timed_with_the_parts() -> None:
    cell = Cell(strategy="mirrored", replicas=2, batch=64, accum_steps=2)  # effective batch 256
    parts = Breakdown(
        parts_step_s=0.012, compute_s=0.006, allreduce_s=0.002, input_s=0.001, dispatch_s=0.0005
    )
    out = derived(cell, _row(cell, Status.OK, 25_600.0, parts))
    assert out.step_s == pytest.approx(0.010)  # 256 / 25,600
    # shares and overlap are of parts_step_s (12 ms), timed in the same rounds as the parts
    assert out.overlap == pytest.approx((0.0095 - 0.012) / 0.012)  # -21 %: a remainder
    assert out.bound == "compute" and out.bound_reason is not None and "unexplained 21%" in out.bound_reason
    assert "of the 12 ms step, compute 50%, communication 17%" in out.bound_reason
    assert "overlap" not in out.bound_reason  # a negative overlap is time no part explains
    # the measured parts are kept as they were
    assert replace(out, step_s=None, overlap=None, bound=None, bound_reason=None) == parts


def test_without_every_part_or_their_step_only_the_step_is_given() -> None:
    cell = Cell(strategy="default", batch=100)
    missing = Breakdown(parts_step_s=0.1, compute_s=0.05, allreduce_s=None, input_s=0.01, dispatch_s=0.001)
    out = derived(cell, _row(cell, Status.OK, 1000.0, missing))
    assert out.step_s == pytest.approx(0.1)
    assert replace(out, step_s=None) == missing  # no overlap, bound or bound_reason
    alone = Breakdown(compute_s=0.05, allreduce_s=0.0, input_s=0.01, dispatch_s=0.001)
    out = derived(cell, _row(cell, Status.OK, 1000.0, alone))
    assert out.step_s == pytest.approx(0.1)  # parts with no step timed alongside: no shares
    assert replace(out, step_s=None) == alone
    assert derived(cell, _row(cell, Status.INVALID, None, Breakdown())) == Breakdown()


# The cell of the report: cnn/default/r1w1/b64/acc4/ctl, a 67.2 ms update, its compute timed at
# 173% of it (116.3 ms).
REPORTED = {"compute_s": 0.1163, "allreduce_s": 0.0, "input_s": 0.00004, "dispatch_s": 0.00002}


def test_a_part_longer_than_the_step_is_an_error_not_a_share() -> None:
    assert excess(0.0672, REPORTED) == {"compute": pytest.approx(1.7307, abs=1e-4)}
    bound, reason = verdict(0.0672, REPORTED)
    assert bound is None
    assert reason.startswith(
        "no verdict: compute (173%) timed alone took longer than the whole "
        "update it was timed with (more than 100% + 10% for timing noise)"
    )
    assert "of the 67.2 ms step, compute 173%" in reason and "bound:" not in reason
    cell = Cell(strategy="default", batch=64, accum_steps=4)  # effective batch 256
    out = derived(cell, _row(cell, Status.OK, 3811.0, Breakdown(parts_step_s=0.0672, **REPORTED)))
    assert out.bound is None and out.bound_reason is not None
    assert out.bound_reason.startswith("no verdict: compute (173%)")


@pytest.mark.parametrize("compute, over", [(0.0099, False), (0.0110, False), (0.01101, True), (0.0120, True)])
def test_a_part_may_exceed_the_step_by_the_noise_allowance_only(compute: float, over: bool) -> None:
    assert NOISE == 0.10
    parts = {"compute_s": compute, "allreduce_s": 0.0, "input_s": 0.0001, "dispatch_s": 0.0001}
    assert bool(excess(STEP, parts)) is over
    assert (verdict(STEP, parts)[0] is None) is over
    # every part is checked, not only the largest
    assert excess(STEP, {**parts, "compute_s": 0.001, "input_s": 0.0115}) == {"input": pytest.approx(1.15)}


def test_the_reference_step_is_the_one_timed_with_the_parts() -> None:
    assert reference_step(Breakdown(step_s=0.010, parts_step_s=0.012)) == 0.012
    assert reference_step(Breakdown(step_s=0.010, parts_step_s=float("nan"))) == 0.010  # older rows
    assert reference_step(Breakdown(step_s=None)) is None


def test_the_parts_are_given_only_when_every_one_is_known() -> None:
    assert parts_of(Breakdown(**REPORTED)) == REPORTED
    assert parts_of(Breakdown(**{**REPORTED, "input_s": float("nan")})) is None
    assert parts_of(Breakdown(**{**REPORTED, "allreduce_s": None})) is None


def test_a_profiled_gpu_update_gets_a_device_side_verdict() -> None:
    # 10 ms profiled: the GPU ran kernels 2 ms and sat idle 7.5 ms waiting for the host
    cell = Cell(strategy="default", batch=256)
    profiled = Breakdown(
        profiled_step_s=0.010, device_s=0.002, collective_s=0.0, input_wait_s=0.0005, host_s=0.0075
    )
    out = derived(cell, _row(cell, Status.OK, 25_600.0, profiled))
    assert out.bound == "host" and out.bound_reason is not None
    assert out.bound_reason.startswith("host-bound: of the 10 ms step, device 20%, communication 0%")
    assert "steps_per_execution" in out.bound_reason and "--jit-compile on" in out.bound_reason
    assert out.overlap == pytest.approx(0.0)  # the parts add up to the profiled window


def test_a_gpu_row_whose_profile_failed_keeps_its_reason_and_gets_no_verdict() -> None:
    cell = Cell(strategy="default", batch=256)
    failed = Breakdown(bound_reason="device time not measured: NoDeviceTrace: no GPU activity")
    out = derived(cell, _row(cell, Status.OK, 25_600.0, failed))
    assert out.bound is None and out.bound_reason == failed.bound_reason
