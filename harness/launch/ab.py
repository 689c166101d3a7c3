"""``python -m harness ab``: the same cells measured in pairs of fresh processes, one started from
interpreter (and settings) A and one from B, back to back in a per-pair random order, until the
sequential rule decides each cell (:mod:`harness.analysis.ab`).

Every process's row goes to the results history as soon as it ends, with ``ab_id``, ``ab_side``
and ``ab_pair``; both sides' fingerprints are kept (they differ when the builds differ), and a
pair whose sides ran on different hardware fails the cell rather than being compared.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__
from harness.analysis import ab
from harness.launch.contract import Event, WorkerOptions
from harness.launch.platform import git_sha
from harness.launch.runner import (
    Launcher,
    each_cell,
    new_run_id,
    plan,
    run_cell_processes,
)
from harness.results.rows import ProcessResult, aggregate, not_measured_row
from harness.results.store import RunFiles
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

HARDWARE = ("device_kind", "device_name", "device_count", "host_cpu", "host_cores")
"""Columns both sides of a pair must share: the same machine, whatever the software."""


@dataclass(frozen=True)
class Side:
    """One side: ``name`` A or B, the interpreter its workers run under (None: this one) and the
    environment variables added to them."""

    name: str
    python: str | None = None
    env: tuple[tuple[str, str], ...] = ()

    def options(self, base: WorkerOptions) -> WorkerOptions:
        return dataclasses.replace(base, python=self.python, env=self.env)


@dataclass
class CellOutcome:
    """One cell's pairs: the ratios B/A so far, the decision, and why it stopped early (if)."""

    cell: Cell
    ratios: list[float] = field(default_factory=list)
    decision: ab.Decision = ab.Decision(float("nan"), float("nan"), float("nan"), 0, ab.UNDECIDED)
    failure: str = ""
    software: dict[str, str] = field(default_factory=dict)


@dataclass
class AbResult:
    ab_id: str
    outcomes: list[CellOutcome] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    interrupted: bool = False


def _hardware_differs(a: dict[str, Any], b: dict[str, Any]) -> str:
    diff = [f"{k}: A {a.get(k)!r}, B {b.get(k)!r}" for k in HARDWARE if a.get(k) != b.get(k)]
    return "; ".join(diff)


class _Pairs:
    """Runs one cell's pairs and writes every process's row."""

    def __init__(self, files: RunFiles, base: dict[str, Any], protocol: Protocol,
                 options: WorkerOptions, sides: dict[str, Side], launcher: Launcher) -> None:
        self.files, self.base, self.protocol = files, base, protocol
        self.options, self.sides, self.launcher = options, sides, launcher
        self.written = 0

    def process(self, cell: Cell, side: str, pair: int) -> dict[str, Any]:
        """One process of ``side``; its row (aggregated as a one-process cell) is stored at once."""
        options = self.sides[side].options(self.options)
        (end,) = list(each_cell([cell], options, self.launcher, prefix=f"{side}{pair}-"))
        row = end.row if end.event == Event.RECORD else not_measured_row(
            cell, self.protocol, "failed", end.reason, end.facts)
        row = {**aggregate(cell, self.protocol, [ProcessResult(row, end.windows, 0, end.wall_s,
                                                               end.launch_s)]),
               **self.base, "ab_side": side, "ab_pair": pair,
               "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        self.files.write_row(self.written, row)
        windows = [{**w, "run_id": self.base["run_id"], "pass": pair, "ab_side": side}
                   for w in end.windows]
        self.files.write_windows(self.written, windows)
        self.written += 1
        return row

    def cell(self, cell: Cell, rule: ab.Rule, orders: Sequence[str],
             report: Callable[[CellOutcome, str], None]) -> CellOutcome:
        outcome = CellOutcome(cell)
        for pair, order in enumerate(orders):
            rows = {side: self.process(cell, side, pair) for side in order}
            bad = next((r for r in rows.values() if r.get("status") != "ok"), None)
            if bad is not None:
                outcome.failure = f"side {bad['ab_side']}, pair {pair}: {bad['status']}: {bad.get('reason')}"
                break
            differs = _hardware_differs(rows["A"], rows["B"])
            if differs:
                outcome.failure = f"the sides ran on different hardware ({differs})"
                break
            outcome.software = {s: f"TensorFlow {r.get('tf_version')}, Keras {r.get('keras_version')}"
                                for s, r in rows.items()}
            outcome.ratios.append(rows["B"]["examples_per_sec"] / rows["A"]["examples_per_sec"])
            outcome.decision = ab.decide(outcome.ratios, rule)
            report(outcome, order)
            if outcome.decision.verdict != ab.UNDECIDED:
                break
        return outcome


def run_ab(cells: Sequence[Cell], protocol: Protocol, platform: Platform, out: Path, a: Side,
           b: Side, rule: ab.Rule, launcher: Launcher = run_cell_processes,
           report: Callable[[CellOutcome, str], None] = lambda outcome, order: None) -> AbResult:
    """Pairs of A and B processes per runnable cell until decided or ``rule.max_pairs``; every
    process's row stored under ``out`` (run_id = ab_id). Unsupported cells are skipped (``list``
    shows them)."""
    now = dt.datetime.now(dt.timezone.utc)
    result = AbResult(new_run_id(now))
    files = RunFiles(out, now.strftime("%Y-%m-%d"), result.ab_id)
    base = {"run_id": result.ab_id, "ab_id": result.ab_id,
            "suite_version": f"{__version__}+{git_sha() or 'unknown'}"}
    options = WorkerOptions(protocol, platform, out / "logs" / files.date / result.ab_id)
    pairs = _Pairs(files, base, protocol, options, {"A": a, "B": b}, launcher)
    runnable = [c for c, why in plan(cells, platform) if why is None]
    try:
        for index, cell in enumerate(runnable):
            orders = ab.pair_orders(rule.max_pairs, protocol.seed + index)
            result.outcomes.append(pairs.cell(cell, rule, orders, report))
    except KeyboardInterrupt:
        result.interrupted = True
    if pairs.written:
        result.paths = [files.folder("cells"), files.folder("windows")]
    return result
