"""``ab``'s pairs with a fake launcher, and a launch and platform through the job file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contract.job import Job, Launch, WorkerOptions
from harness.launch.versions.ab import MODES
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol


def test_a_launch_and_mig_platform_survive_the_job_file() -> None:
    launch = Launch((("K", "V"),), index=1, cores=2, meet=2)
    platform = Platform("gpu", 2, gpu_ids=("MIG-a", "MIG-b"), mig=True)
    job = Job(Cell(model="dense"), WorkerOptions.of(Protocol(), platform, log_dir=Path("/tmp")), launch)
    again = Job.from_json(json.loads(json.dumps(job.to_json())))
    assert again.launch == launch and again.options.platform == platform


@pytest.mark.usefixtures("no_git")
def test_ctrl_c_keeps_the_pairs_measured_so_far(tmp_path: Path) -> None:
    from harness.analysis.versions.ab import Rule
    from harness.contract.events import Event
    from harness.launch.versions.ab import AbSide, run_ab

    calls = []

    def launcher(cell, options, name):  # type: ignore[no-untyped-def]
        calls.append(name)
        if len(calls) == 7:  # the 4th pair's first process
            raise KeyboardInterrupt
        speed = 100.0 if name.startswith("A") else 90.0
        yield {"event": Event.START, "cell_id": cell.id}
        yield {
            "event": Event.RECORD,
            "row": {"status": "ok", "reason": "", "examples_per_sec": speed},
            "windows": [],
        }

    result = run_ab(
        [Cell(model="dense", strategy="default")],
        Protocol(),
        Platform(),
        tmp_path,
        AbSide("A"),
        AbSide("B"),
        Rule(min_pairs=5),
        MODES["alternate"],
        launcher,
    )
    assert result.interrupted and len(result.outcomes) == 1
    outcome = result.outcomes[0]
    assert outcome.ratios == pytest.approx([0.9, 0.9, 0.9]) and outcome.decision.pairs == 3
    assert result.paths  # the six processes' rows are stored
    import pandas as pd

    cells = pd.read_parquet(tmp_path / "ab" / "cells")
    assert len(cells) == 6 and (cells.groupby("ab_pair").ab_side.nunique() == 2).all()
    assert set(cells.ab_mode) == {"alternate"} and cells.ab_cpus.isna().all()  # the whole host each
    assert set(cells.ab_min_effect) == {0.02} and set(cells.ab_min_pairs) == {5}  # the rule, for the report
