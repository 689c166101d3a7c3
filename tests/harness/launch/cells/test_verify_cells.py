"""verify's workers get op determinism and TF32 off (``WorkerOptions.deterministic``); a measured
run's do not. On a fake ``each_cell``: no process, no TensorFlow."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.run.verdicts import Numerics
from harness.commands.selection import Selection
from harness.contract.events import Event, ProcessRow
from harness.contract.job import Job, WorkerOptions
from harness.contract.records import CellRow, Checks, Machine, Status
from harness.launch.cells import runner
from harness.results.measurement import axes
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from harness.spec.sweeps import get_sweep

PLATFORM = Platform("cpu", 0, 2)


def test_verify_cells_hand_every_worker_the_deterministic_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[WorkerOptions] = []

    def fake_each_cell(cells: Sequence[Cell], options: WorkerOptions, **_: Any) -> Iterator[runner.CellEnd]:
        seen.append(options)
        for c in cells:
            row = CellRow(
                cell=axes(c),
                status=Status.OK,
                checks=Checks(final_loss=2.3, weights_digest="ab"),
                machine=Machine(
                    device_kind="GPU",
                    device_name="NVIDIA H100 80GB HBM3",
                    build_info=json.dumps({"cuda_version": "12.5.1", "tensor_float_32": False}),
                ),
            )
            report: ProcessRow = {"op_determinism": True}
            yield runner.CellEnd(c, Event.RECORD, row, report)

    monkeypatch.setattr(runner, "each_cell", fake_each_cell)
    options = WorkerOptions.of(Protocol(), PLATFORM, tmp_path)
    assert options.deterministic is False  # a measured run's default

    outcomes = runner.verify_cells([Cell(model="dense", strategy="default")], 8, PLATFORM, options)

    assert [o.deterministic for o in seen] == [True]
    assert seen[0].verify_updates == 8
    back = Job.from_json(json.loads(json.dumps(Job(Cell(), seen[0]).to_json())))
    assert back.options.deterministic is True  # what the worker reads
    assert outcomes[0].numerics == Numerics("GPU NVIDIA H100 80GB HBM3", True, False)


def test_a_measured_run_leaves_tensorflow_s_numerics_alone(tmp_path: Path) -> None:
    sel = Selection(get_sweep("smoke"), Protocol(), PLATFORM, [Cell()])
    assert sel.worker_options(tmp_path).deterministic is False
