"""``python -m harness ab``: the same cells measured in pairs of fresh processes (:data:`MODES`), one
from interpreter (and settings) A and one from B, until the sequential rule decides each cell
(:mod:`harness.analysis.versions.ab`; docs/how-to/compare-builds.md)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.analysis.versions import ab
from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.records import AbInfo, CellRow, RunInfo, Status, WindowRow
from harness.formulas.turns import clean, instance_log_ratio
from harness.formulas.verdicts import UNDECIDED
from harness.launch.cells.runner import (
    CellEnd,
    Launcher,
    each_cell,
    new_run_id,
    plan,
    run_cell_processes,
    suite_version,
)
from harness.launch.instances.turns import Plan, run_instance
from harness.launch.system.platform import HostMachine, this_machine
from harness.results.aggregate import ProcessResult, aggregate
from harness.results.store import AB_FOLDER, RunFiles
from harness.spec.cell import Cell
from harness.spec.groups import ab_group
from harness.spec.protocol import Platform, Protocol


def _machine(row: CellRow, *names: str) -> dict[str, Any]:
    """The row's machine columns ``names`` (None each where the row has no machine)."""
    return {n: getattr(row.machine, n, None) for n in names}


def hardware(row: CellRow) -> dict[str, object]:
    """What both sides of a pair must share, by column: the same machine, whatever the software."""
    device = _machine(row, "device_kind", "device_name")
    return {**device, "device_count": row.ran.device_count, **_machine(row, "host_cpu", "host_cores")}


@dataclass(frozen=True)
class AbSide:
    """One side: ``name`` A or B, its workers' interpreter (None: this one) and added variables."""

    name: str
    python: str | None = None
    env: tuple[tuple[str, str], ...] = ()

    def options(self, base: WorkerOptions) -> WorkerOptions:
        return dataclasses.replace(base, python=self.python, env=self.env)


def given(value: str, env: tuple[tuple[str, str], ...]) -> str:
    """A side as recorded: as given, with its environment variables."""
    return " ".join([value, *("=".join(kv) for kv in env)])


@dataclass(frozen=True)
class Mode:
    """How a pair's two processes share the machine."""

    name: str
    text: str


MODES = {
    m.name: m
    for m in (
        Mode("alternate", "A and B one after the other, each with the whole host, in the pair's order"),
        Mode(
            "turns",
            "A and B live at once, taking turns: each side's processes run one timed window with "
            "the whole machine while the other side's wait without using CPU, in ABBA blocks; a "
            "pair is one instance (fresh processes of both sides), its ratio the mean block log ratio",
        ),
    )
}
"""``ab --mode``: turns is the default (a change in threads or parallelism shows; its instances vary little)."""


@dataclass
class CellOutcome:
    """One cell's pairs: the ratios B/A so far, the decision, and why it stopped early."""

    cell: Cell
    mode: str = "alternate"
    ratios: list[float] = field(default_factory=list)
    decision: ab.Decision = ab.Decision(float("nan"), float("nan"), float("nan"), 0, UNDECIDED)
    failure: str = ""
    software: dict[str, str] = field(default_factory=dict)
    a_facts: dict[str, str | None] = field(default_factory=dict)
    """AbSide A's fingerprint, host_cpu and device_name (from its last ok pair)."""


@dataclass
class AbResult:
    ab_id: str
    outcomes: list[CellOutcome] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    interrupted: bool = False


class Pairs:
    """Runs cells' pairs as a new measurement (``run.run_id``), every process's row under
    ``out/folder`` stamped with ``machine`` (default: this host), its workers' logs under ``out/logs``."""

    def __init__(
        self,
        out: Path,
        folder: str,
        protocol: Protocol,
        platform: Platform,
        sides: dict[str, AbSide],
        launcher: Launcher = run_cell_processes,
        machine: HostMachine | None = None,
    ) -> None:
        now = dt.datetime.now(dt.UTC)
        run_id = new_run_id(now)
        self.files = RunFiles(out / folder, now.strftime("%Y-%m-%d"), run_id)
        self.run = (machine or this_machine()).stamp(RunInfo(run_id=run_id, suite_version=suite_version()))
        self.options = WorkerOptions.of(protocol, platform, out / "logs" / self.files.date / run_id)
        self.protocol, self.sides, self.launcher = protocol, sides, launcher
        self.written = 0
        self.turn_ratio = float("nan")
        """The last pair's B/A in turns (mode turns)."""
        self.rule = ab.Rule()
        """The rule of the cell being measured (its rows record it)."""

    def paths(self) -> list[Path]:
        """The folders the rows and windows went to (none before the first row)."""
        return [self.files.folder("cells"), self.files.folder("windows")] if self.written else []

    def _end(self, cell: Cell, side: str, pair: int) -> CellEnd:
        options = self.sides[side].options(self.options)
        (end,) = each_cell([cell], options, self.launcher, prefix=f"{side}{pair}-")
        return end

    def _store(
        self, end: CellEnd, side: str, pair: int, mode: Mode, turn_ratio: float | None = None
    ) -> CellRow:
        """The process's row (aggregated as a one-process cell), stored at once with its windows."""
        cell, row = end.cell, end.measured(self.protocol, end.facts)
        row = replace(
            aggregate(cell, self.protocol, [ProcessResult(row, end.windows, 0, end.wall_s, end.launch_s)]),
            run=replace(self.run, timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="seconds")),
            ab=AbInfo(
                ab_id=self.run.run_id,
                ab_side=side,
                ab_pair=pair,
                ab_mode=mode.name,
                ab_turn_ratio=turn_ratio,
                ab_min_effect=self.rule.min_effect,
                ab_min_pairs=self.rule.min_pairs,
            ),
        )
        self.files.write_row(self.written, row)
        windows: list[WindowRow] = [
            {**w, "run_id": self.run.run_id, "pass": pair, "ab_side": side} for w in end.windows
        ]
        self.files.write_windows(self.written, windows)
        self.written += 1
        return row

    def _turns(self, cell: Cell, pair: int, order: str, mode: Mode) -> dict[str, CellRow]:
        """Both sides live, in turns (``order``: who gets the first turn); the ratio in :attr:`turn_ratio`."""
        group = ab_group(cell)
        if order == "BA":
            group = dataclasses.replace(group, members=group.members[::-1])
        plan = Plan.of(self.protocol, self.options.startup_timeout_s)
        instance = run_instance(
            group, pair, plan, lambda m: self.sides[m.side].options(self.options), self.launcher, f"ab{pair}-"
        )
        (comparison,) = group.comparisons
        turns = clean(instance.turns)  # blocks in which something else used the CPUs left out
        self.turn_ratio = math.exp(instance_log_ratio(turns, comparison.subject, comparison.reference))
        ratio = self.turn_ratio if math.isfinite(self.turn_ratio) else None
        rows = {}
        for m in group.members:  # in ``order``
            end = instance.ends.get(m.key) or CellEnd(
                cell, Event.FAILED, reason=instance.dropped or "no record"
            )
            if instance.dropped and end.event == Event.RECORD:
                end = CellEnd(
                    cell, Event.FAILED, reason=f"instance dropped: {instance.dropped}", facts=end.facts
                )
            rows[m.side] = self._store(end, m.side, pair, mode, ratio)
        return rows

    def pair(self, cell: Cell, pair: int, order: str, mode: Mode) -> dict[str, CellRow]:
        """One pair's rows, by side."""
        if mode.name == "turns":
            return self._turns(cell, pair, order, mode)
        return {s: self._store(self._end(cell, s, pair), s, pair, mode) for s in order}

    def add_pair(self, outcome: CellOutcome, pair: int, order: str) -> bool:
        """One more pair of ``outcome.cell`` in ``order``, its ratio B/A appended to ``outcome.ratios``
        (none when every block was disturbed); False when the cell failed (``outcome.failure``)."""
        rows = self.pair(outcome.cell, pair, order, MODES[outcome.mode])
        bad = next(((s, r) for s, r in rows.items() if r.status != Status.OK), None)
        if bad is not None:
            side, r = bad
            outcome.failure = f"side {side}, pair {pair}: {r.status}: {r.reason}"
            return False
        ha, hb = hardware(rows["A"]), hardware(rows["B"])
        differs = "; ".join(f"{k}: A {ha[k]!r}, B {hb[k]!r}" for k in ha if ha[k] != hb[k])
        if differs:
            outcome.failure = f"the sides ran on different hardware ({differs})"
            return False
        software = "TensorFlow {tf_version}, Keras {keras_version}"
        outcome.software = {
            s: software.format(**_machine(r, "tf_version", "keras_version")) for s, r in rows.items()
        }
        outcome.a_facts = _machine(rows["A"], "fingerprint", "host_cpu", "device_name")
        ratio = self.turn_ratio if outcome.mode == "turns" else _figure(rows["B"]) / _figure(rows["A"])
        if math.isfinite(ratio):  # else every block was disturbed: the pair says nothing
            outcome.ratios.append(ratio)
        return True

    def cell(
        self,
        outcome: CellOutcome,
        rule: ab.Rule,
        orders: Sequence[str],
        report: Callable[[CellOutcome, str], None],
    ) -> None:
        """Pairs of ``outcome.cell`` until decided, failed or out of ``orders``; ``outcome`` holds
        every finished pair at each moment (a Ctrl-C keeps them)."""
        self.rule = rule
        for pair, order in enumerate(orders):
            before = len(outcome.ratios)
            if not self.add_pair(outcome, pair, order):
                break
            if len(outcome.ratios) == before:
                continue
            outcome.decision = ab.decide(outcome.ratios, rule)
            report(outcome, order)
            if outcome.decision.verdict != UNDECIDED:
                break


def _figure(row: CellRow) -> float:
    """An ok side's examples/s (an ok row always has one)."""
    value = row.examples_per_sec.value
    assert value is not None, row.cell.cell_id
    return value


def run_ab(
    cells: Sequence[Cell],
    protocol: Protocol,
    platform: Platform,
    out: Path,
    a: AbSide,
    b: AbSide,
    rule: ab.Rule,
    mode: Mode = MODES["turns"],
    launcher: Launcher = run_cell_processes,
    report: Callable[[CellOutcome, str], None] = lambda outcome, order: None,
    machine: HostMachine | None = None,
) -> AbResult:
    """Pairs of A and B processes per runnable cell, in ``mode``, until decided or ``rule.max_pairs``;
    every row under ``out/ab`` (run_id = ab_id), stamped with ``machine`` (default: this host).
    Unsupported cells are skipped. ``launcher`` starts alternate pairs' processes."""
    pairs = Pairs(out, AB_FOLDER, protocol, platform, {"A": a, "B": b}, launcher, machine)
    result = AbResult(pairs.run.run_id)
    runnable = [c for c, why in plan(cells, platform) if why is None]
    try:
        for index, cell in enumerate(runnable):
            orders = ab.pair_orders(rule.max_pairs, protocol.seed + index)
            result.outcomes.append(CellOutcome(cell, mode.name))
            pairs.cell(result.outcomes[-1], rule, orders, report)
    except KeyboardInterrupt:
        result.interrupted = True
    result.paths = pairs.paths()
    return result
