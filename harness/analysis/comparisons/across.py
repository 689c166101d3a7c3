"""The one comparison across runs that could not take turns, over a grouping key: a machine
(``compare-hardware``) or a link setting (``compare-links``). Pure. Each configuration's figure in a
group is its runs' (one run figure per run: its last row), with a 95% CI from the variance model of
:mod:`harness.formulas.across_runs` (docs/explanation/statistics.md, "Across machines"); a group
against another is a ratio, a verdict (:func:`harness.formulas.verdicts.judge`, equivalent inside
±``min_effect``) and, when undecided, the runs a side likely to decide it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.run.findings import figures
from harness.contract.columns import Estimate
from harness.contract.records import CellRow
from harness.formulas import across_runs
from harness.formulas.across_runs import ONE, PS, SEVERAL, Run, RunFigure, RunSpread, Side
from harness.formulas.stats import Ratio
from harness.formulas.verdicts import DECIDED, judge
from harness.spec.protocol import DEFAULT_MIN_EFFECT
from harness.spec.strategies import STRATEGIES

MIN_EFFECT = DEFAULT_MIN_EFFECT
"""The smallest difference across runs called higher or lower, and the equivalence band's
half-width: the suite's one band, as for ratios taken in turns (the CI, not the band, carries
what runs that could not take turns add)."""


def kind(row: CellRow) -> str:
    """The kind of configuration whose run-by-configuration term is fitted apart: a
    parameter-server cell, one of several processes (workers or tenants), or one process."""
    strategy = STRATEGIES.get(row.cell.strategy)
    if strategy is not None and strategy.ps_tasks:
        return PS
    multi = strategy is not None and strategy.multi_worker
    return SEVERAL if multi or (row.cell.tenants or 1) > 1 else ONE


def by_run(rows: Sequence[CellRow]) -> dict[str, dict[str, CellRow]]:
    """Cell id -> run id -> the run's last row of it (rows taken in timestamp order)."""
    out: dict[str, dict[str, CellRow]] = {}
    for r in sorted(rows, key=lambda r: r.run.timestamp):
        out.setdefault(r.cell.cell_id, {})[r.run.run_id] = r
    return out


def run_figure(row: CellRow) -> RunFigure:
    return RunFigure(float(row.examples_per_sec.value or 0), tuple(figures(row)))


def runs_of(rows: Sequence[CellRow]) -> list[Run]:
    """The runs of ``rows`` (one machine or one link setting) for :func:`across_runs.fit`."""
    out: dict[str, dict[str, tuple[str, RunFigure]]] = {}
    start: dict[str, str] = {}
    for cid, runs in by_run(rows).items():
        for run_id, r in runs.items():
            out.setdefault(run_id, {})[cid] = (kind(r), run_figure(r))
            start[run_id] = min(start.get(run_id, r.run.timestamp), r.run.timestamp)
    return [Run(start[run_id], figs) for run_id, figs in out.items()]


def spread(
    groups: Sequence[Sequence[CellRow]], calibration: RunSpread = across_runs.CALIBRATION
) -> RunSpread:
    """The calibration set's spread pooled with each group's own runs (its rows)."""
    return across_runs.pooled(calibration, [runs_of(g) for g in groups])


def side(rows: Sequence[CellRow], fitted: RunSpread, instances: int = 0) -> Side:
    """One configuration's side from its rows in one group (one per run) on ``instances`` host
    instances of a machine type (0: the comparison is of these instances)."""
    return across_runs.side([run_figure(r) for r in rows], fitted, kind(rows[0]), instances)


def instance_spread(types: Sequence[Sequence[Sequence[CellRow]]]) -> RunSpread:
    """The instance-to-instance spread (:data:`across_runs.INSTANCE`) of machine types with two or
    more instances, each given as its instances' rows: each instance one pseudo-run (its runs'
    process figures together), whose fitted run-wide shift is the instances' spread (with the
    run-to-run shift it holds)."""
    parts = RunSpread()
    for instances in types:
        pseudo = [Run(min(r.run.timestamp for r in rows), _pooled(rows)) for rows in instances]
        shift = across_runs.fit(pseudo).part(across_runs.SHIFT)
        parts = parts + RunSpread(((across_runs.INSTANCE, shift),)) if shift.df else parts
    return parts


def _pooled(rows: Sequence[CellRow]) -> dict[str, tuple[str, RunFigure]]:
    """Cell id -> (kind, one figure of every run's process figures together)."""
    out: dict[str, tuple[str, RunFigure]] = {}
    for cid, runs in by_run(rows).items():
        procs = tuple(x for r in runs.values() for x in figures(r))
        out[cid] = (kind(next(iter(runs.values()))), RunFigure(float(statistics.median(procs)), procs))
    return out


def estimate(s: Side) -> Estimate:
    """The side's figure and its 95% CI, examples/s."""
    return Estimate(*across_runs.interval(s))


@dataclass(frozen=True)
class Versus:
    """One group against another on one configuration (or each at its best): the ratio of their
    figures with its 95% CI, the verdict, what the CI rests on in words, and the runs a side
    likely to decide it (0: decided; None: more than :data:`across_runs.MAX_RUNS`)."""

    group: str
    ratio: Ratio
    verdict: str
    basis: str
    runs_to_decide: int | None = 0


def versus(group: str, a: Side, b: Side, min_effect: float = MIN_EFFECT) -> Versus:
    """``group``'s side ``a`` against the other's ``b``."""
    r = across_runs.ratio(a, b)
    verdict = judge(r.value, r.low, r.high, min_effect)
    band = math.log1p(min_effect)
    runs = 0 if verdict in DECIDED else across_runs.decide_runs(a, b, band)
    basis = " / ".join(f"{s.runs} run" + ("" if s.runs == 1 else "s") for s in (a, b))  # what the CI rests on
    return Versus(group, r, verdict, basis, runs)


def method(fitted: RunSpread, where: str) -> str:
    """The method line's sentence on the spread, with its provenance."""
    shift, g = fitted.part(across_runs.SHIFT), fitted.between(ONE)
    return (
        f"{where} cannot take turns, so each CI carries the run-to-run spread of the suite's variance "
        f"model: a run-wide shift of {shift.variance**0.5:.1%} per run ({shift.df:g} degrees of freedom) "
        f"and a configuration's own run-to-run spread of {(g.ss / g.df if g.df else math.nan) ** 0.5:.1%} "
        f"(one-process configurations, its processes' usual noise included; {g.df:.0f} degrees of freedom), "
        f"fitted on {fitted.words}, with their own uncertainty (docs/explanation/statistics.md)"
    )


def groups_of(rows: Sequence[CellRow], key: Mapping[str, str]) -> dict[str, list[CellRow]]:
    """Group name -> its rows, by ``key`` (run id -> group name; runs it lacks are left out)."""
    out: dict[str, list[CellRow]] = {}
    for r in rows:
        if r.run.run_id in key:
            out.setdefault(key[r.run.run_id], []).append(r)
    return out
