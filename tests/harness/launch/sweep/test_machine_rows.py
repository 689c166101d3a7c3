"""Every row a run writes carries the machine: its name, id, facts and the protocol's version, on
the cells, ratios and costs tables of a run in turns (fake instances), on ``ab``'s rows (a fake
launcher), and on the RunInfo that ``nightly`` and ``bisect`` hand their pairs (no process, no
TensorFlow). Read back with :mod:`harness.results.store`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.contract.machine import PROTOCOL_VERSION, MachineFacts
from harness.contract.records import RunInfo
from harness.contract.wheels import Wheel
from harness.launch.cells.peak import PeakLog
from harness.launch.sweep import budget
from harness.launch.sweep.run_params import Hooks, Output, Work
from harness.launch.system.platform import HostMachine, this_machine
from harness.launch.versions import bisect as lb
from harness.launch.versions import nightly as ln
from harness.launch.versions.ab import MODES, AbSide, Pairs, run_ab
from harness.launch.versions.builds import Held
from harness.results.store import read, read_cells
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from tests.harness.launch.sweep.test_budget import DEFAULT, ONE, TWO, Clock, _fake

pytestmark = pytest.mark.usefixtures("no_git")

FACTS = MachineFacts(cpu_model="AMD EPYC", cpu_flags="avx2 fma", cores=2, cpu_quota=1.0, memory_gib=24)
LAB = HostMachine("lab-epyc (halved)", FACTS)
COLUMNS = ["machine", "machine_id", "machine_facts", "protocol_version"]


def _stamped(frame: pd.DataFrame, host: HostMachine) -> None:
    assert len(frame) and frame[COLUMNS].notna().all().all()
    assert set(frame["machine"]) == {host.name} and set(frame["machine_id"]) == {host.facts.short_id}
    assert {MachineFacts.from_json(f) for f in frame["machine_facts"]} == {host.facts}
    assert set(frame["protocol_version"]) == {PROTOCOL_VERSION}


def _run_in_turns(root: Path, monkeypatch: pytest.MonkeyPatch, machine: HostMachine | None) -> None:
    protocol = Protocol(processes=2, max_processes=4, budget_min=1.0, blocks=2, max_live=8, peak=False)
    clock = Clock()
    _fake(monkeypatch, protocol, clock, {DEFAULT.id: 1000.0, ONE.id: 1000.0, TWO.id: 1100.0})
    unsupported = Cell(model="dense", strategy="mirrored", replicas=64)  # a row that says why
    budget.run_in_turns(
        Work((DEFAULT, ONE, TWO, unsupported), protocol, Platform(), machine=machine),
        Output(root),
        hooks=Hooks(clock=clock, peaks=PeakLog(Platform(), ())),
    )


def test_a_run_in_turns_stamps_its_cells_ratios_and_costs_with_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_in_turns(tmp_path, monkeypatch, LAB)
    cells = read_cells(tmp_path)
    assert "unsupported" in set(cells["status"])  # rows of cells never measured carry it too
    _stamped(cells, LAB)
    _stamped(read(tmp_path, "ratios"), LAB)
    _stamped(read(tmp_path, "costs"), LAB)


def test_without_a_name_the_rows_carry_this_hosts_default_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_in_turns(tmp_path, monkeypatch, None)
    here = this_machine()
    assert here.name == here.facts.default_name
    _stamped(read_cells(tmp_path), here)


def test_ab_rows_carry_the_machine(tmp_path: Path) -> None:
    from harness.analysis.versions.ab import Rule
    from harness.contract.events import Event

    def launcher(cell, options, name):  # type: ignore[no-untyped-def]
        yield {"event": Event.START, "cell_id": cell.id}
        speed = 100.0 if name.startswith("A") else 90.0
        yield {
            "event": Event.RECORD,
            "row": {"status": "ok", "reason": "", "examples_per_sec": speed},
            "windows": [],
        }

    run_ab(
        [Cell(model="dense", strategy="default")],
        Protocol(),
        Platform(),
        tmp_path,
        AbSide("A"),
        AbSide("B"),
        Rule(min_pairs=2, max_pairs=2),
        MODES["alternate"],
        launcher,
        machine=LAB,
    )
    _stamped(read_cells(tmp_path / "ab"), LAB)


RUNS: list[RunInfo] = []
"""What :class:`_Captured` was given."""


class _Captured(Pairs):
    """Pairs that keep the RunInfo they were given (every pair's rows are stamped with it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        RUNS.append(self.run)


def _check(run: RunInfo, host: HostMachine) -> None:
    assert (run.machine, run.machine_id, run.protocol_version) == (
        host.name,
        host.facts.short_id,
        PROTOCOL_VERSION,
    )
    assert run.machine_facts == host.facts.to_json()


def test_nightly_and_bisect_pairs_get_a_stamped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    RUNS.clear()
    monkeypatch.setattr(ln, "Pairs", _Captured)
    monkeypatch.setattr(lb, "Pairs", _Captured)
    ln.measure(
        [], Protocol(), Platform(), tmp_path, AbSide("A"), AbSide("B"), ln.NightBudget(1.0), machine=LAB
    )
    _check(RUNS[-1], LAB)

    measurer = lb.AbMeasurer(Cell(), Protocol(fork=False), Platform(), tmp_path, Held("python", ""), LAB)
    with measurer.step(_installed(tmp_path / "a"), _installed(tmp_path / "b")):
        _check(RUNS[-1], LAB)


def _installed(folder: Path) -> Any:
    from harness.launch.versions.builds import Installed

    return Installed(
        Wheel("tensorflow-cpu", "2.20.0", "2025-08-13"),
        str(folder),
        "2.20.0",
        "",
        "3.0",
    )
