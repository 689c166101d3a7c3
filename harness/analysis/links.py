"""``compare-links``: what a faster link between nodes buys (docs/how-to/cluster.md). Pure (typed rows
and the collectives rows in, a :class:`LinkComparison` out; said by
:mod:`harness.analysis.links_text`, drawn by :mod:`harness.analysis.links_figure`).

Rows: ok rows with a figure measured on several nodes whose chief measured the link (``link_gbps``,
Gbit/s from the chief to the slowest other node). Link settings (:func:`group_links`): runs slowest
first; a run joins the current setting while every run of it stays within ±:data:`TOLERANCE` of the
setting's median. Per configuration (a cell id on a node count) and setting: the throughput over
the runs against the slowest setting (:mod:`harness.analysis.across`), the breakdown's all-reduce
and step time, and predict's figure (:func:`harness.analysis.scaling.predictions`; the latency per
ring step the alpha of the collectives fit on its machine, or 0: :class:`Modelled`); all-reduce
strategies only."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.analysis import across, scaling
from harness.analysis.across import MIN_EFFECT, Versus
from harness.analysis.answer import labels
from harness.contract.columns import Estimate
from harness.contract.records import CellRow, Status
from harness.errors import HarnessError
from harness.formulas.across_runs import CALIBRATION, Side, Spread
from harness.spec.strategies import ALLREDUCE_STRATEGIES

TOLERANCE = scaling.LINK_TOLERANCE

ERROR_BAND = 0.15
"""An error of predict within ±15% is called right (its fit error on this suite's CPU collectives
is of that order); beyond, off."""

CURVE_POINTS = 41
"""Points of predict's curve over the measured link range (log-spaced)."""

NOT_MODELLED = "not modelled (predict models all-reduce only)"

CLUSTER_HINT = (
    "measure them first at each link setting, e.g. `sudo tools/slurm-nodes.sh --link-gbps 1`, then "
    "`srun -N2 -n2 --wait=120 python -m harness run --cluster slurm --model dense "
    "--strategy multi_worker_mirrored`; again at --link-gbps 10 (docs/how-to/cluster.md)"
)


@dataclass(frozen=True)
class Setting:
    """A link setting: runs whose measured links (Gbit/s) lie within ±:data:`TOLERANCE` of their
    median ``gbps``."""

    gbps: float
    run_ids: tuple[str, ...]
    links: tuple[float, ...]
    """Each run's measured link, Gbit/s (in ``run_ids``' order)."""

    @property
    def label(self) -> str:
        """``0.94 Gbit/s``, ``9.41 Gbit/s``, ``23.5 Gbit/s``."""
        return f"{self.gbps:.3g} Gbit/s"


def group_links(links: Mapping[str, float], tolerance: float = TOLERANCE) -> tuple[Setting, ...]:
    """Run id -> measured Gbit/s as link settings, slowest first (module doc)."""
    groups: list[list[tuple[str, float]]] = []
    for run_id, gbps in sorted(links.items(), key=lambda kv: (kv[1], kv[0])):
        joined = [*groups[-1], (run_id, gbps)] if groups else []
        if joined and _within([g for _, g in joined], tolerance):
            groups[-1] = joined
        else:
            groups.append([(run_id, gbps)])
    return tuple(
        Setting(
            statistics.median(g for _, g in group), tuple(r for r, _ in group), tuple(g for _, g in group)
        )
        for group in groups
    )


def _within(values: Sequence[float], tolerance: float) -> bool:
    m = statistics.median(values)
    return all(abs(v / m - 1) <= tolerance for v in values)


@dataclass(frozen=True)
class Point:
    """One configuration at one link setting: its throughput over the setting's runs, the
    all-reduce and step time (s/update, median over runs; None where not measured), predict's
    figure (examples/s; None where there is none) and the setting against the slowest."""

    setting: Setting
    side: Side
    allreduce_s: float | None
    step_s: float | None
    predicted: float | None
    versus: Versus | None
    """Against the slowest setting (None at the configuration's slowest)."""
    predicted_ratio: float | None = None
    """predict's ratio of this setting's figure to the slowest's."""
    interval: tuple[float, float] = (math.nan, math.nan)
    """predict's 95% interval, examples/s (:func:`harness.analysis.scaling.predictions`)."""

    @property
    def estimate(self) -> Estimate:
        """The throughput and its 95% CI, examples/s."""
        return across.estimate(self.side)

    @property
    def error(self) -> float | None:
        """predict's relative error, (predicted - measured) / measured."""
        return None if self.predicted is None else scaling.error(self.predicted, self.side.value)

    @property
    def inside(self) -> bool | None:
        """Whether the measured figure lies inside predict's interval (None: no interval)."""
        low, high = self.interval
        return None if math.isnan(low + high) else low <= self.side.value <= high


@dataclass(frozen=True)
class Modelled:
    """What predict's figures rest on, or why there are none (``note``): the 1-device row, the
    latency per ring step (us) and where it came from, and its curve: (Gbit/s, examples/s) over
    the measured link range."""

    note: str
    short: str = ""
    """What the table's predict column says without a figure ("not modelled", "no baseline")."""
    baseline_cell_id: str = ""
    latency_us: float | None = None
    curve: tuple[tuple[float, float], ...] = ()

    @property
    def modelled(self) -> bool:
        return bool(self.baseline_cell_id)


@dataclass(frozen=True)
class Configuration:
    """One configuration (a cell id on a node count) across the link settings, slowest first."""

    cell_id: str
    model: str
    strategy: str
    label: str
    """The configuration in words, unique among the model's (:func:`harness.analysis.answer.labels`)."""
    nodes: int
    workers: int
    points: tuple[Point, ...]
    modelled: Modelled

    @property
    def title(self) -> str:
        """``dense, MultiWorkerMirroredStrategy on 2 workers on 2 nodes`` (the row's label says the nodes)."""
        return f"{self.model}, {self.label}"


@dataclass(frozen=True)
class LinkComparison:
    settings: tuple[Setting, ...]
    configurations: tuple[Configuration, ...]
    min_effect: float
    error_band: float
    left_out: tuple[str, ...]
    """What was read but not compared, in words (rows without a measured link)."""
    spread: Spread
    """The run-to-run spread every CI carries: the calibration set's with each setting's runs."""


def compare(
    rows: Sequence[CellRow],
    collectives: Any = None,
    model: str | None = None,
    where: str = "the results",
    min_effect: float = MIN_EFFECT,
    calibration: Spread = CALIBRATION,
) -> LinkComparison:
    """The comparison of the multi-node rows of ``rows`` (every row given: the one-node baselines
    are among them) of ``model`` (every model when None); ``collectives``, a DataFrame of the
    collectives table, gives predict its latency. HarnessError (exit 2), naming what is missing
    and the command that measures it: no multi-node rows under ``where``, none with a measured
    link, an unknown ``model``, one link setting only."""
    multi = [
        r for r in rows if r.status == Status.OK and r.examples_per_sec.value and (r.ran.nodes or 1) >= 2
    ]
    if not multi:
        raise HarnessError(
            f"no multi-node rows (status ok, nodes >= 2) under --results {where}: {CLUSTER_HINT}."
        )
    linked = [r for r in multi if (r.ran.link_gbps or 0) > 0]
    if not linked:
        raise HarnessError(
            f"the {len(multi)} multi-node rows under --results {where} hold no measured link "
            f"(link_gbps: null in rows written before the suite measured it); {CLUSTER_HINT}."
        )
    models = sorted({r.cell.model for r in linked})
    if model is not None and model not in models:
        raise HarnessError(
            f"Received --model {model!r}; expected one the multi-node rows hold ({', '.join(models)}), "
            f"or measure it first: `srun -N2 -n2 --wait=120 python -m harness run --cluster slurm "
            f"--model {model} --strategy multi_worker_mirrored` at each link setting."
        )
    mine = [r for r in linked if model is None or r.cell.model == model]
    settings = group_links(_run_links(mine))
    if len(settings) < 2:
        (only,) = settings
        raise HarnessError(
            f"the multi-node rows under --results {where} hold one link setting ({only.label}: runs "
            f"{', '.join(only.run_ids)}); compare-links needs two or more: reshape the link and run "
            f"the same cells again, e.g. `sudo tools/slurm-nodes.sh --link-gbps {_other(only.gbps)}` "
            "(docs/how-to/cluster.md)."
        )
    named = labels(list({r.cell.cell_id: r for r in mine}.values()))
    fitted = across.spread(
        list(across.groups_of(mine, {r: s.label for s in settings for r in s.run_ids}).values()), calibration
    )
    by_config: dict[tuple[str, int], dict[str, CellRow]] = {}
    for r in sorted(mine, key=lambda r: r.run.timestamp):  # a run's last row of a cell stands
        by_config.setdefault((r.cell.cell_id, r.ran.nodes or 2), {})[r.run.run_id] = r
    configs = tuple(
        _configuration(runs, settings, named[cid], nodes, rows, collectives, min_effect, fitted)
        for (cid, nodes), runs in by_config.items()
    )
    left = len(multi) - len(linked)
    left_out = (f"{left} multi-node rows without a measured link (link_gbps null)",) if left else ()
    return LinkComparison(settings, configs, min_effect, ERROR_BAND, left_out, fitted)


def _run_links(rows: Sequence[CellRow]) -> dict[str, float]:
    """Run id -> its measured link (the median of its rows' link_gbps), Gbit/s."""
    per_run: dict[str, list[float]] = {}
    for r in rows:
        per_run.setdefault(r.run.run_id, []).append(float(r.ran.link_gbps or math.nan))
    return {run: statistics.median(v) for run, v in per_run.items()}


def _other(gbps: float) -> str:
    """A link setting to try beside ``gbps``: ten times faster, or ten times slower from 10 up."""
    return f"{gbps * 10:.0f}" if gbps < 10 else f"{gbps / 10:.0f}"


def _configuration(
    runs: Mapping[str, CellRow],
    settings: Sequence[Setting],
    label: str,
    nodes: int,
    rows: Sequence[CellRow],
    collectives: Any,
    min_effect: float,
    fitted: Spread,
) -> Configuration:
    newest = list(runs.values())[-1]
    here = [(s, [runs[r] for r in s.run_ids if r in runs]) for s in settings]
    measured = [(s, mine) for s, mine in here if mine]
    modelled, predicted = _modelled(newest, rows, collectives, [s.gbps for s, _ in measured])
    sides = [across.side(mine, fitted) for _, mine in measured]
    slow = _figure(predicted.get(measured[0][0].gbps))
    points = []
    for i, ((s, mine), side) in enumerate(zip(measured, sides, strict=True)):
        p = predicted.get(s.gbps)
        fast = _figure(p)
        points.append(
            Point(
                s,
                side,
                _median([r.breakdown.allreduce_s for r in mine]),
                _median([r.breakdown.step_s for r in mine]),
                fast,
                across.versus(s.label, side, sides[0], min_effect) if i else None,
                None if not i or fast is None or slow is None else fast / slow,
                (math.nan, math.nan) if p is None else (p.low, p.high),
            )
        )
    c = newest.cell
    return Configuration(c.cell_id, c.model, c.strategy, label, nodes, c.workers, tuple(points), modelled)


def _median(values: Sequence[float | None]) -> float | None:
    held = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(held) if held else None


def _figure(p: scaling.Prediction | None) -> float | None:
    return None if p is None else p.examples_per_sec


def _modelled(
    row: CellRow, rows: Sequence[CellRow], collectives: Any, links: Sequence[float]
) -> tuple[Modelled, dict[float, scaling.Prediction]]:
    """predict's figures for ``row``'s configuration: what they rest on, and Gbit/s -> its
    prediction at each of ``links`` (empty where predict has none, :attr:`Modelled.note` saying
    why)."""
    a = row.cell
    if a.strategy not in ALLREDUCE_STRATEGIES:
        return Modelled(NOT_MODELLED, "not modelled"), {}
    if a.replicas != 1:
        return Modelled("not modelled (predict models one replica per worker)", "not modelled"), {}
    config = scaling.config_of(a)
    base = scaling.find_one_device(rows, config)
    if base is None or not scaling.one_node(base):
        return (
            Modelled(
                "no prediction: no 1-worker row of this configuration measured on one node; "
                f"measure it (without --cluster): `{scaling.measure_hint(config)}`",
                "no baseline",
            ),
            {},
        )
    op = scaling.op_of(a)
    fit, source = _latency(collectives, a.strategy, op, a.model, base)
    latency_us = fit.alpha_s * 1e6

    def at(gbps: float) -> scaling.Prediction:
        link = dataclasses.replace(fit, beta_s_per_byte=scaling.link_alpha_beta(gbps, 0).beta_s_per_byte)
        return scaling.predictions(rows, scaling.Query(config, (a.workers,), op, link)).lines[0].prediction

    low, high = min(links), max(links)
    grid = np.geomspace(low / 2, high * 2, CURVE_POINTS)
    note = f"from {base.cell.cell_id} on one node at {a.workers} workers; {source}"
    return (
        Modelled(
            note,
            "",
            base.cell.cell_id,
            latency_us,
            tuple((float(g), at(float(g)).examples_per_sec) for g in grid),
        ),
        {g: at(g) for g in links},
    )


def _latency(
    collectives: Any, strategy: str, op: str, model: str, base: CellRow
) -> tuple[scaling.AlphaBeta, str]:
    """The latency per ring step predict is given, as a link whose alpha (with its variance) is the
    collectives fit's of ``strategy`` [``op``] on the baseline's machine, else 0; and where it came
    from."""
    if collectives is not None and not collectives.empty:
        try:
            fit, *_ = scaling.cost_from_table(collectives, strategy, op, model, base)
        except HarnessError:
            pass
        else:
            alpha = fit.alpha_s * 1e6
            link = scaling.AlphaBeta(fit.alpha_s, 0.0, "", cov=(fit.cov[0], 0.0, 0.0), df=fit.df)
            return link, f"latency {alpha:.1f} us per ring step: the alpha of the {fit.source}"
    return scaling.AlphaBeta(0.0, 0.0, ""), (
        f"latency 0 us per ring step: no collectives fit of {strategy}[{op}] on the baseline's "
        "machine (`python -m harness run --sweep collectives` measures one)"
    )
