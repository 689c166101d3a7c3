"""The step-time breakdown's derived columns and the verdict rules, on planted breakdowns."""

from __future__ import annotations

import pytest

from harness.formulas.breakdown import BOUNDS, columns, verdict
from harness.spec.cell import Cell

STEP = 0.010  # s per update


@pytest.mark.parametrize("parts, bound, knob", [
    ({"compute_s": 0.008, "allreduce_s": 0.001, "input_s": 0.0005, "dispatch_s": 0.0001},
     "compute", "precision"),
    ({"compute_s": 0.003, "allreduce_s": 0.006, "input_s": 0.0005, "dispatch_s": 0.0001},
     "communication", "accumulation"),
    ({"compute_s": 0.002, "allreduce_s": 0.001, "input_s": 0.007, "dispatch_s": 0.0001},
     "input", "prefetch"),
    ({"compute_s": 0.001, "allreduce_s": 0.0, "input_s": 0.0005, "dispatch_s": 0.008},
     "dispatch", "steps_per_execution"),
])
def test_the_largest_share_decides_and_names_its_knob(parts: dict[str, float], bound: str,
                                                       knob: str) -> None:
    name, reason = verdict(STEP, parts)
    assert name == bound
    assert reason.startswith(f"{bound}-bound: of the 10 ms step")
    assert knob in reason
    for b in BOUNDS:  # every share is listed
        assert f"{b.name} {parts[b.part] / STEP:.0%}" in reason


def test_columns_give_step_overlap_and_bound() -> None:
    cell = Cell(strategy="mirrored", replicas=2, batch=64, accum_steps=2)  # effective batch 256
    row = {"status": "ok", "examples_per_sec": 25_600.0, "compute_s": 0.006, "allreduce_s": 0.002,
           "input_s": 0.001, "dispatch_s": 0.0005}
    out = columns(cell, row)
    assert out["step_s"] == pytest.approx(0.010)  # 256 / 25,600
    assert out["overlap"] == pytest.approx((0.0095 - 0.010) / 0.010)  # -5 %: a remainder
    assert out["bound"] == "compute" and "overlap -5%" in out["bound_reason"]


def test_without_every_part_only_the_step_is_given() -> None:
    cell = Cell(strategy="default", batch=100)
    out = columns(cell, {"status": "ok", "examples_per_sec": 1000.0, "compute_s": 0.05,
                         "allreduce_s": None, "input_s": 0.01, "dispatch_s": 0.001})
    assert out == {"step_s": pytest.approx(0.1)}
    assert columns(cell, {"status": "invalid", "examples_per_sec": None}) == {}
