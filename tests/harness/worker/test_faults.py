"""The test-only fault hook (HARNESS_INJECT_FAULT): each fault misbehaves in its own cell, at its
own point, and nowhere else."""

from __future__ import annotations

import pytest

from harness.spec.cell import Cell
from harness.worker import faults


def test_each_of_several_faults_misbehaves_in_its_own_cell_at_its_own_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    monkeypatch.setattr(faults, "_misbehave", seen.append)
    a, b, c = (Cell(model="dense", strategy=s) for s in ("default", "one_device", "mirrored"))
    spec = f"kill:{a.id};hang@turn:{b.id};stop@1:{c.id}"
    for cell, worker, point in [
        (a, 0, "start"),  # kill
        (a, 0, "turn"),
        (b, 0, "start"),
        (b, 0, "turn"),  # hang
        (c, 0, "joined"),
        (c, 1, "joined"),  # stop: task 1 once joined
    ]:
        faults._inject(spec, cell, worker, point)
    assert seen == ["kill", "hang", "stop"]
    faults._inject(None, a, 0, "start")
    faults._inject("", a, 0, "start")
    assert seen == ["kill", "hang", "stop"]
