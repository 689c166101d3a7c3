"""``compare-links``: what a faster link between nodes buys, the model of the step across nodes
(:mod:`harness.analysis.scale.scale_out`) checked at every measured link setting, and the answer for N
nodes (docs/how-to/cluster.md). Pure: ok multi-node rows whose chief measured the link, grouped
into settings, in; a :class:`LinkComparison` out (said by :mod:`harness.analysis.scale.links_text`,
drawn by :mod:`harness.analysis.scale.scaling_figure`)."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.comparisons import across
from harness.analysis.comparisons.across import MIN_EFFECT, Versus
from harness.analysis.run.answer import labels
from harness.analysis.scale import scale_out, scaling
from harness.contract.columns import Estimate
from harness.contract.records import CellRow, Status
from harness.errors import HarnessError
from harness.formulas.across_runs import CALIBRATION, RunSpread, Side

ERROR_BAND = 0.15
"""A prediction within ±15% of the measured figure is called right; beyond, off."""

CURVE_POINTS = 41
"""Points of the model's curve over the measured link range (log-spaced)."""

NOT_MODELLED = (
    "not modelled (the model takes one worker per node, under MultiWorkerMirrored or a parameter server)"
)

CLUSTER_HINT = (
    "measure them first at each link setting, e.g. `sudo tools/slurm-nodes.sh --link-gbps 1`, then "
    "`srun -N2 -n2 --wait=120 python -m harness run --cluster slurm --model dense "
    "--strategy multi_worker_mirrored`; again at --link-gbps 10 (docs/how-to/cluster.md)"
)


@dataclass(frozen=True)
class AtLink:
    """One configuration at one link setting: its throughput over the setting's runs, the
    costs across the link timed apart and step time (s/update, median over runs; None where not
    measured), the model's figure with the rest from the other settings' runs (None where there
    is none) and the setting against the slowest."""

    setting: scale_out.LinkSetting
    side: Side
    crossing_s: float | None
    step_s: float | None
    model: scale_out.Predicted | None
    versus: Versus | None
    """Against the slowest setting (None at the configuration's slowest)."""
    predicted_ratio: float | None = None
    """The model's ratio of this setting's figure to the slowest's."""

    @property
    def predicted(self) -> float | None:
        """The model's figure, examples/s."""
        return None if self.model is None else self.model.value

    @property
    def interval(self) -> tuple[float, float]:
        """The model's 95% interval, examples/s (NaN without one)."""
        return (math.nan, math.nan) if self.model is None else (self.model.low, self.model.high)

    @property
    def estimate(self) -> Estimate:
        """The throughput and its 95% CI, examples/s."""
        return across.estimate(self.side)

    @property
    def error(self) -> float | None:
        """The model's relative error, (predicted - measured) / measured."""
        return None if self.predicted is None else scaling.error(self.predicted, self.side.value)

    @property
    def inside(self) -> bool | None:
        """Whether the measured figure lies inside the model's interval (None: no interval)."""
        low, high = self.interval
        return None if math.isnan(low + high) else low <= self.side.value <= high


@dataclass(frozen=True)
class Modelled:
    """What the model's figures rest on, or why there are none (``note``), and its curve: (Gbit/s,
    examples/s) over the measured link range, from the fit over every setting."""

    note: str
    short: str = ""
    """What the table's model column says without a figure ("not modelled", "no baseline")."""
    curve: tuple[tuple[float, float], ...] = ()

    @property
    def modelled(self) -> bool:
        return bool(self.curve)


@dataclass(frozen=True)
class Configuration:
    """One configuration (a cell id on a node count) across the link settings, slowest first."""

    cell_id: str
    model: str
    strategy: str
    label: str
    """The configuration in words, unique among the model's (:func:`harness.analysis.run.answer.labels`)."""
    nodes: int
    workers: int
    points: tuple[AtLink, ...]
    modelled: Modelled
    answers: tuple[scale_out.NodesAnswer, ...] = ()
    """The answer for N nodes at each link asked (none where not modelled)."""

    @property
    def title(self) -> str:
        """``dense, MultiWorkerMirroredStrategy on 2 workers on 2 nodes`` (the row's label says the nodes)."""
        return f"{self.model}, {self.label}"


@dataclass(frozen=True)
class LinkComparison:
    settings: tuple[scale_out.LinkSetting, ...]
    configurations: tuple[Configuration, ...]
    min_effect: float
    error_band: float
    left_out: tuple[str, ...]
    """What was read but not compared, in words (rows without a measured link)."""
    spread: RunSpread
    """The run-to-run spread every CI carries: the calibration set's with each setting's runs."""


def compare(
    rows: Sequence[CellRow],
    model: str | None = None,
    where: str = "the results",
    min_effect: float = MIN_EFFECT,
    calibration: RunSpread = CALIBRATION,
    links: Sequence[float] = (),
    counts: Sequence[int] = scale_out.NODE_COUNTS,
) -> LinkComparison:
    """The comparison of the multi-node rows of ``rows`` (every row given: the one-node baselines
    are among them) of ``model`` (every model when None), with the answer for ``counts`` nodes at
    ``links`` (Gbit/s; default: the measured settings'). HarnessError (exit 2), naming what is
    missing and the command that measures it: no multi-node rows under ``where``, none with a
    measured link, an unknown ``model``, one link setting only."""
    mine, settings, unlinked = _measured(rows, model, where)
    named = labels(list({r.cell.cell_id: r for r in [*mine, *rows]}.values()))
    fitted = across.spread(
        list(across.groups_of(mine, {r: s.label for s in settings for r in s.run_ids}).values()), calibration
    )
    by_config: dict[tuple[str, int], dict[str, CellRow]] = {}
    for r in sorted(mine, key=lambda r: r.run.timestamp):  # a run's last row of a cell stands
        by_config.setdefault((r.cell.cell_id, r.ran.nodes or 2), {})[r.run.run_id] = r
    configs = {
        cid: config
        for (cid, _), runs in by_config.items()
        if (config := _config(list(runs.values())[-1], rows, fitted)) is not None
    }
    model_of = _Model(mine, configs, scale_out.checks(mine, configs, settings, fitted))
    asked = tuple(links) or tuple(s.gbps for s in settings)
    out = []
    for (cid, nodes), runs in by_config.items():
        conf = _configuration(runs, settings, named[cid], nodes, model_of, min_effect, fitted)
        out.append(dataclasses.replace(conf, answers=model_of.answers(cid, asked, counts, rows, named)))
    left_out = (f"{unlinked} multi-node rows without a measured link (link_gbps null)",) if unlinked else ()
    return LinkComparison(settings, tuple(out), min_effect, ERROR_BAND, left_out, fitted)


def _measured(
    rows: Sequence[CellRow], model: str | None, where: str
) -> tuple[list[CellRow], tuple[scale_out.LinkSetting, ...], int]:
    """The ok multi-node rows of ``model`` with a measured link, their link settings and how many
    multi-node rows hold no measured link; HarnessError (exit 2) where there are none of these rows
    or one setting only."""
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
    settings = scale_out.group_links(_run_links(mine))
    if len(settings) < 2:
        (only,) = settings
        raise HarnessError(
            f"the multi-node rows under --results {where} hold one link setting ({only.label}: runs "
            f"{', '.join(only.run_ids)}); compare-links needs two or more: reshape the link and run "
            f"the same cells again, e.g. `sudo tools/slurm-nodes.sh --link-gbps {_other(only.gbps)}` "
            "(docs/how-to/cluster.md)."
        )
    return mine, settings, len(multi) - len(linked)


def _config(row: CellRow, rows: Sequence[CellRow], fitted: RunSpread) -> scale_out.Config | None:
    """The model's configuration of ``row``: one worker per node of a modelled strategy, with its
    one-node baseline; None otherwise."""
    if row.cell.strategy not in scale_out.ACROSS or row.cell.replicas != 1:
        return None
    return scale_out.config_of(row, rows, fitted)


def _run_links(rows: Sequence[CellRow]) -> dict[str, float]:
    """Run id -> its measured link (the median of its rows' link_gbps), Gbit/s."""
    per_run: dict[str, list[float]] = {}
    for r in rows:
        per_run.setdefault(r.run.run_id, []).append(float(r.ran.link_gbps or math.nan))
    return {run: statistics.median(v) for run, v in per_run.items()}


def _other(gbps: float) -> str:
    """A link setting to try beside ``gbps``: ten times faster, or ten times slower from 10 up."""
    return f"{gbps * 10:.0f}" if gbps < 10 else f"{gbps / 10:.0f}"


@dataclass(frozen=True)
class _Model:
    """The model across nodes over a comparison's rows: the configurations it scales, their checks,
    and the fit over every setting (the curve and the answer for N nodes)."""

    multi: Sequence[CellRow]
    configs: Mapping[str, scale_out.Config]
    checked: scale_out.Checked

    def fit(self, strategy: str) -> scale_out.LinkFit | None:
        return scale_out.fit(self.multi, self.configs, strategy)

    def modelled(self, row: CellRow, links: Sequence[float]) -> Modelled:
        """What the figures of ``row``'s configuration rest on, and its curve over ``links``."""
        a = row.cell
        config = self.configs.get(a.cell_id)
        if a.strategy not in scale_out.ACROSS or a.replicas != 1:
            return Modelled(NOT_MODELLED, "not modelled")
        if config is None:
            hint = scaling.measure_hint(scale_out.baseline_config(row))
            note = f"no prediction: no 1-worker row of this configuration measured on one node; measure it (without --cluster): `{hint}`"
            return Modelled(note, "no baseline")
        link = self.fit(a.strategy)
        if link is None:
            return Modelled(f"no prediction: {NO_PARTS}", "no parts")
        grid = np.geomspace(min(links) / 2, max(links) * 2, CURVE_POINTS)
        curve = tuple(
            (float(g), scale_out.throughput(config, link, row.ran.nodes or 2, float(g))) for g in grid
        )
        return Modelled(scale_out.source(config, link), "", curve)

    def answers(
        self,
        cid: str,
        links: Sequence[float],
        counts: Sequence[int],
        rows: Sequence[CellRow],
        named: Mapping[str, str],
    ) -> tuple[scale_out.NodesAnswer, ...]:
        """The answer for ``counts`` nodes at each of ``links`` (none where not modelled)."""
        config = self.configs.get(cid)
        link = None if config is None else self.fit(config.strategy)
        if config is None or link is None:
            return ()
        best = _best_one_node(rows, config.model, named)
        measured = {
            g: frozenset((r.ran.nodes or 2) for r in self.multi if r.cell.cell_id == cid and _near(r, g))
            for g in links
        }
        errors = self.checked.errors[config.strategy]
        return tuple(scale_out.answer(config, link, errors, g, measured[g], best, counts) for g in links)


NO_PARTS = (
    "the multi-node rows hold no costs across the link timed apart (allreduce_s and reduce_s, or "
    "ps_read_s and ps_update_s: rows written before the step breakdown timed them); run them again"
)


def _near(row: CellRow, gbps: float) -> bool:
    return abs(float(row.ran.link_gbps or math.nan) / gbps - 1) <= scale_out.LINK_TOLERANCE


def _best_one_node(rows: Sequence[CellRow], model: str, named: Mapping[str, str]) -> tuple[str, float]:
    """One node's best configuration of ``model``: the highest median examples/s over runs of the
    ok rows measured on one node, with its label."""
    figures: dict[str, list[float]] = {}
    for r in rows:
        if (
            r.status == Status.OK
            and r.cell.model == model
            and scaling.one_node(r)
            and r.examples_per_sec.value
        ):
            figures.setdefault(r.cell.cell_id, []).append(float(r.examples_per_sec.value))
    cid, values = max(figures.items(), key=lambda kv: statistics.median(kv[1]))
    return named.get(cid, cid), statistics.median(values)


def _configuration(
    runs: Mapping[str, CellRow],
    settings: Sequence[scale_out.LinkSetting],
    label: str,
    nodes: int,
    model: _Model,
    min_effect: float,
    fitted: RunSpread,
) -> Configuration:
    newest = list(runs.values())[-1]
    here = [(s, [runs[r] for r in s.run_ids if r in runs]) for s in settings]
    measured = [(s, mine) for s, mine in here if mine]
    modelled = model.modelled(newest, [s.gbps for s, _ in measured])
    sides = [across.side(mine, fitted) for _, mine in measured]
    predicted = {s.label: model.checked.points.get((newest.cell.cell_id, s.label)) for s, _ in measured}
    slow = predicted[measured[0][0].label]
    points = []
    for i, ((s, mine), side) in enumerate(zip(measured, sides, strict=True)):
        p = predicted[s.label] if modelled.modelled else None
        points.append(
            AtLink(
                s,
                side,
                _median([scale_out.crossing_s(r) for r in mine]),
                _median([r.breakdown.step_s for r in mine]),
                p,
                across.versus(s.label, side, sides[0], min_effect) if i else None,
                None if not i or p is None or slow is None else p.value / slow.value,
            )
        )
    c = newest.cell
    return Configuration(c.cell_id, c.model, c.strategy, label, nodes, c.workers, tuple(points), modelled)


def _median(values: Sequence[float | None]) -> float | None:
    held = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(held) if held else None
