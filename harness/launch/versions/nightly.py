"""``python -m harness nightly``'s night (:func:`night`): the candidate (B) against the pinned
reference (A) on every runnable cell in rounds of ``ab --mode turns`` pairs until the budget is
spent, then one point per cell appended to its series (docs/how-to/nightly.md)."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from harness import __version__
from harness.analysis.versions import ab, nightly
from harness.analysis.versions.nightly_page import page
from harness.contract.columns import Estimate
from harness.contract.records import ChangePoint, NightlyRow, Status
from harness.formulas.budget import Budget
from harness.launch.cells.runner import Launcher, plan, run_cell_processes, suite_version
from harness.launch.sweep.run_params import Work
from harness.launch.system import forks
from harness.launch.system.lock import taken
from harness.launch.system.platform import HostMachine
from harness.launch.versions import envs
from harness.launch.versions.ab import AbSide, CellOutcome, Pairs, given
from harness.launch.versions.envs import Env
from harness.results.store import NIGHTLY_FOLDER, RunFiles, read_nightly
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol


@dataclass(frozen=True)
class NightBudget:
    """How long a night measures: rounds of pairs (:func:`due`) until ``seconds`` are spent and every
    cell has ``min_pairs`` usable pairs (or tries), at most ``max_pairs`` pairs per cell."""

    seconds: float
    min_pairs: int = 10
    max_pairs: int = 200


@dataclass
class NightResult:
    """A night's measurement: its id and date, each runnable cell's pairs, files written."""

    night_id: str
    date: str
    outcomes: list[CellOutcome] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0


def due(outcomes: Sequence[CellOutcome], tried: Sequence[int], budget: NightBudget) -> list[int]:
    """The cells (indices) the next round measures: each live cell with fewer than
    ``budget.min_pairs`` usable pairs; once every one has them, the noisier half (standard error of
    the mean log ratio at least the median), so every CI narrows alike. None past ``max_pairs`` tries."""
    live = [i for i, o in enumerate(outcomes) if not o.failure and tried[i] < budget.max_pairs]
    short = [i for i in live if len(outcomes[i].ratios) < budget.min_pairs]
    if short or not live:
        return short
    se = {
        i: float(np.std(np.log(outcomes[i].ratios), ddof=1)) / math.sqrt(len(outcomes[i].ratios))
        for i in live
    }
    cut = float(np.median(list(se.values())))
    return [i for i in live if se[i] >= cut]


def measure(
    cells: Sequence[Cell],
    protocol: Protocol,
    platform: Platform,
    out: Path,
    reference: AbSide,
    candidate: AbSide,
    budget: NightBudget,
    launcher: Launcher = run_cell_processes,
    report: Callable[[Sequence[CellOutcome], int, float], None] = lambda outcomes, rnd, spent: None,
    clock: Callable[[], float] = time.monotonic,
    machine: HostMachine | None = None,
) -> NightResult:
    """Rounds of pairs under ``budget``, ``report`` after each (outcomes, round from 1, seconds
    spent); a Ctrl-C keeps the pairs so far. Rows carry ``machine`` (default: this host)."""
    pairs = Pairs(
        out, NIGHTLY_FOLDER, protocol, platform, {"A": reference, "B": candidate}, launcher, machine
    )
    result = NightResult(pairs.run.run_id, pairs.files.date)
    result.outcomes = [CellOutcome(c, "turns") for c, why in plan(cells, platform) if why is None]
    orders = [ab.pair_orders(budget.max_pairs, protocol.seed + i) for i in range(len(result.outcomes))]
    start = clock()
    tried = [0] * len(result.outcomes)
    rnd = 0
    try:
        while todo := due(result.outcomes, tried, budget):
            spent = Budget(budget.seconds, clock() - start).left_s <= 0
            if spent and all(tried[i] >= budget.min_pairs for i in todo):
                break  # spent, and every cell tried min_pairs times (disturbed pairs count as tries)
            for i in todo:
                pairs.add_pair(result.outcomes[i], tried[i], orders[i][tried[i]])
                tried[i] += 1
            rnd += 1
            report(result.outcomes, rnd, clock() - start)
    except KeyboardInterrupt:
        result.interrupted = True
    result.seconds = clock() - start
    result.paths = pairs.paths()
    return result


def series_key(cell_id: str, fingerprint: str | None, suite: str, pin: str) -> str:
    """A series' key: the cell, machine fingerprint, suite version (``__version__``, bumped when what
    is measured changes) and reference pin."""
    blob = "|".join((cell_id, fingerprint or "", suite, pin)).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def history(points: pd.DataFrame, key: str) -> list[nightly.Night]:
    """The earlier nights of series ``key`` with a point (status ok), oldest first."""
    if points.empty:
        return []
    rows = points[(points["series"] == key) & (points["status"] == Status.OK)].sort_values("timestamp")
    return [
        nightly.Night(str(r["label"]), math.log(float(r["ratio"])), float(r["log_ratio_se"]), int(r["pairs"]))
        for r in rows.to_dict("records")
        if pd.notna(r["ratio"]) and pd.notna(r["log_ratio_se"])
    ]


def _decided(row: NightlyRow, v: nightly.NightVerdict, confidence: float) -> NightlyRow:
    n, c, cp = v.night, v.change, v.change_point
    low, high = n.ci(confidence)
    return replace(
        row,
        status=Status.OK,
        ratio=Estimate.of(n.ratio, low, high),
        log_ratio_se=n.se if math.isfinite(n.se) else None,
        change=Estimate.of(c.ratio, c.low, c.high),
        verdict=c.verdict,
        baseline=",".join(c.baseline),
        change_point=ChangePoint()
        if cp is None
        else ChangePoint(
            change_point=cp.label, change_point_shift=cp.shift, change_point_p=cp.p, change_point_new=cp.new
        ),
        alarm=",".join(v.alarms) or None,
    )


def _last_fingerprint(points: pd.DataFrame, cell_id: str, pin: str) -> str | None:
    """The fingerprint of the cell's latest series with this reference pin (a cell that failed
    before any pair has none of its own, and its row belongs to that series)."""
    if points.empty:
        return None
    same = points[(points["cell_id"] == cell_id) & (points["reference_pin"] == pin)]
    fps = same.sort_values("timestamp")["fingerprint"].dropna()
    return str(fps.iloc[-1]) if len(fps) else None


def points(
    result: NightResult, candidate: Env, reference: Env, request: NightRequest, out: Path, budget_min: float
) -> tuple[list[NightlyRow], list[nightly.NightVerdict | None]]:
    """Tonight's point per cell (a failed cell: a row with the reason) and its verdict (None for a
    failed cell), each judged with its series' earlier nights by ``request.rules``."""
    rules, label = request.rules, request.label
    earlier = read_nightly(out)
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    suite = suite_version()
    rows: list[NightlyRow] = []
    verdicts: list[nightly.NightVerdict | None] = []
    for o in result.outcomes:
        fp = o.a_facts.get("fingerprint") or _last_fingerprint(earlier, o.cell.id, reference.pin)
        key = series_key(o.cell.id, fp, __version__, reference.pin)
        why = o.failure or f"{len(o.ratios)} usable pairs (every block of the others disturbed); 2 needed"
        row = NightlyRow(
            night_id=result.night_id,
            timestamp=stamp,
            label=label,
            cell_id=o.cell.id,
            series=key,
            suite_version=suite,
            fingerprint=fp,
            host_cpu=o.a_facts.get("host_cpu"),
            device_name=o.a_facts.get("device_name"),
            candidate=candidate.given,
            reference=reference.given,
            candidate_versions=candidate.versions,
            reference_versions=reference.versions,
            reference_pin=reference.pin,
            status=Status.FAILED,
            reason=why,
            pairs=len(o.ratios),
            min_effect=rules.min_effect,
            budget_min=budget_min,
        )
        verdict = None
        if not o.failure and len(o.ratios) >= 2:
            series = [*history(earlier, key), nightly.night_of(label, o.ratios)]
            verdict = nightly.judge(series, rules)[-1]
            row = _decided(replace(row, reason=None), verdict, rules.confidence)
        rows.append(row)
        verdicts.append(verdict)
    return rows, verdicts


@dataclass(frozen=True)
class NightRequest:
    """A night as ``nightly`` asks for it: each side as given (a spec or an interpreter) with its
    workers' environment variables, the sides' venvs folder, the label, the rules, the budget, and
    whether to wait for another run's machine lock."""

    candidate: str
    baseline: str
    candidate_env: tuple[tuple[str, str], ...]
    baseline_env: tuple[tuple[str, str], ...]
    envs: Path
    label: str
    rules: nightly.Rules
    budget: NightBudget
    wait_lock: bool = False


@dataclass(frozen=True)
class NightRun:
    """What a night produced: its measurement and, unless interrupted, its point and verdict per
    cell, the points folder and the dashboard written."""

    result: NightResult
    rows: list[NightlyRow] = field(default_factory=list)
    verdicts: list[nightly.NightVerdict | None] = field(default_factory=list)
    written: Path | None = None
    dashboard: Path | None = None


def night(
    work: Work,
    out: Path,
    request: NightRequest,
    report: Callable[[Sequence[CellOutcome], int, float], None] = lambda outcomes, rnd, spent: None,
) -> NightRun:
    """One night: the sides' environments (:mod:`harness.launch.versions.envs`), the unsupported cells
    named, the rounds of pairs under the machine lock (:func:`measure`), then tonight's points
    (:func:`points`) written and the dashboard drawn again. An interrupted night appends no point."""
    print(f"preparing the baseline {request.baseline!r} and the candidate {request.candidate!r}", flush=True)
    reference = envs.reference(request.baseline, request.envs, out / NIGHTLY_FOLDER)
    candidate = envs.candidate(request.candidate, request.envs)
    print(
        f"reference: {reference.versions} (pin {reference.pin}); candidate: {candidate.versions}", flush=True
    )
    reference = replace(reference, given=given(reference.given, request.baseline_env))
    candidate = replace(candidate, given=given(candidate.given, request.candidate_env))
    for cell, why in plan(work.cells, work.platform):
        if why:
            print(f"skipped, unsupported here: {cell.id}: {why}", flush=True)
    with taken(out, request.wait_lock), forks.serving(work.protocol.fork):
        result = measure(
            work.cells,
            work.protocol,
            work.platform,
            out,
            AbSide("A", reference.python, request.baseline_env),
            AbSide("B", candidate.python, request.candidate_env),
            request.budget,
            report=report,
            machine=work.machine,
        )
    if result.interrupted:
        return NightRun(result)
    rows, verdicts = points(result, candidate, reference, request, out, work.protocol.budget_min)
    written = RunFiles(out / NIGHTLY_FOLDER, result.date, result.night_id).write_points(rows)
    dashboard = out / NIGHTLY_FOLDER / "index.html"
    dashboard.write_text(page(read_nightly(out), f"nightly: {request.candidate} against {request.baseline}"))
    return NightRun(result, rows, verdicts, written, dashboard)
