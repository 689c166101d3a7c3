"""The answer's next step, followed through: every command the answer can print (each bound of a
CPU or GPU update, for each configuration the default sweep races there) is parsed as ``run``
parses it, planned, and run on fakes, and its answer decides between the knob's two values."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from harness.analysis.run import answer
from harness.commands import build_parser
from harness.formulas.breakdown import BOUNDS, PROFILE_BOUNDS, Bound
from harness.formulas.verdicts import LOWER
from harness.launch.cells.peak import PeakLog
from harness.launch.sweep import budget
from harness.launch.sweep.run_params import Hooks, Output, Work
from harness.spec.axes import AXES
from harness.spec.cell import Cell
from harness.spec.groups import headline_groups
from harness.spec.protocol import Platform, Protocol
from harness.spec.sweep import Sweep, contenders, expand
from harness.spec.sweeps import DEFAULT
from tests.harness.launch.cells.test_runner import harness
from tests.harness.launch.sweep.test_budget import Clock, _fake

pytestmark = pytest.mark.usefixtures("no_git")

CPU = Platform(cpu_bf16=("amx_bf16", "avx512_bf16"))
GPU = Platform("gpu", 1, gpu_memory_mib=81_559)
PROTOCOL = Protocol(
    processes=3, max_processes=6, budget_min=5.0, blocks=2, max_live=8, peak=False, breakdown=False
)


def _commands(platform: Platform, bounds: tuple[Bound, ...]) -> list[str]:
    """Every next command the answer prints for a leader among the default sweep's contenders on
    ``platform``, bound by any of ``bounds``."""
    raced = set(contenders(DEFAULT, platform))
    leaders = [c.to_dict() for c in expand(DEFAULT, platform) if c.id in raced]
    found = (answer.next_step(b, config) for b in bounds for config in leaders)
    return sorted({step.items[0] for step in found if step is not None})


CASES = [(c, CPU) for c in _commands(CPU, BOUNDS)] + [(c, GPU) for c in _commands(GPU, PROFILE_BOUNDS)]


def _selected(command: str, platform: Platform) -> tuple[list[Cell], tuple[str, ...]]:
    """The cells and contenders ``command`` selects on ``platform``, parsed as ``run`` parses it."""
    args = build_parser(["run"]).parse_args(shlex.split(command)[3:])
    overrides = {a.name: a.parse(getattr(args, a.name)) for a in AXES if getattr(args, a.name) is not None}
    sweep = Sweep("custom", "axes from the command line").with_axes(overrides)
    return expand(sweep, platform), contenders(sweep, platform)


def test_the_answer_can_print_a_next_command_for_every_bound() -> None:
    assert len(CASES) >= 6
    assert {c.split(" --")[-1].split()[0] for c, _ in CASES} >= {
        "precision",
        "batch",
        "accum-steps",
        "steps-per-execution",
        "jit-compile",
    }


@pytest.mark.parametrize("command, platform", CASES, ids=[c for c, _ in CASES])
def test_each_next_command_races_its_two_values_and_its_answer_decides(
    command: str, platform: Platform, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells, raced = _selected(command, platform)
    (race,) = headline_groups(cells, raced, PROTOCOL.max_live)
    assert len(cells) == 2 and len(race.members) == 2  # the two values, live together
    clock = Clock()
    _fake(monkeypatch, PROTOCOL, clock, {cells[0].id: 1000.0, cells[1].id: 1300.0})

    result = budget.run_in_turns(
        Work(tuple(cells), PROTOCOL, platform, contenders=raced),
        Output(tmp_path / "results"),
        hooks=Hooks(clock=clock, peaks=PeakLog(platform, ())),
    )

    (found,) = answer.answers(result.rows, result.ratios)
    assert found.fastest and found.leader.cell.cell_id == cells[1].id
    assert [v.verdict for v in found.versus] == [LOWER]
    assert "fastest of the 2 configurations compared" in answer.text([found], result.rows)


@pytest.mark.process
@pytest.mark.slow  # minutes on 2 cores: the command the answer prints for a compute-bound CNN leader
def test_a_next_command_typed_as_printed_ends_in_a_decided_verdict(tmp_path: Path) -> None:
    command = next(c for c, p in CASES if p is CPU and "--model cnn --strategy default --precision" in c)
    flags = shlex.split(command)[3:]
    proc = harness(*flags, "--budget-min", "3", "--results", str(tmp_path / "r"), "--no-peak", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout[proc.stdout.index("What to train with here:") :]
    assert "fastest of the 2 configurations compared" in text and "Not decided yet" not in text, text
