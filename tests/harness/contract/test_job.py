"""What a worker's job carries of the run's protocol: the settings the worker reads, never the
budget or the parent's other settings."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from harness.contract.job import Job, WorkerOptions, WorkerSettings
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol


def test_a_worker_s_job_holds_the_settings_it_reads_not_the_run_s_protocol() -> None:
    protocol = Protocol(
        budget_min=7.0, processes=4, max_processes=9, turn_s=0.3, seed=5, window_s=0.5, cell_timeout_s=90.0
    )
    options = WorkerOptions.of(protocol, Platform(), Path("/logs"))

    assert options.settings == WorkerSettings(
        repeats=5,
        window_s=0.5,
        warmup_windows=1,
        min_window_steps=10,
        seed=5,
        rendezvous_timeout_s=120.0,
        worker_memory_gib=0.0,
        breakdown=True,
    )
    assert options.cell_timeout_s == 90.0  # the launcher's deadline, from the protocol
    sent = Job(Cell(), options).to_json()["options"]
    assert "protocol" not in sent and set(sent["settings"]) == {f.name for f in fields(WorkerSettings)}
    parent_only = {f.name for f in fields(Protocol)} - {f.name for f in fields(WorkerSettings)}
    assert {"budget_min", "processes", "turn_s", "blocks", "min_effect"} <= parent_only
    assert not parent_only & set(sent["settings"])
    assert Job.from_json(json.loads(json.dumps(Job(Cell(), options).to_json()))).options == options
