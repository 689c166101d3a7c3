"""The step across nodes (``compare-links``): each per-update cost that crosses the link, timed apart
on the cluster by the step breakdown, fitted to a latency, a wire time and a CPU time per byte
(:func:`fit`), plus the rest of each configuration's measured step, and the step of N nodes built
from them (:func:`step_s`, :func:`throughput`), one :class:`Across` entry per strategy. The model's
formulas and assumptions: docs/how-to/cluster.md ("What a faster link buys"). :func:`checks`
predicts each link setting with the rest from the other settings' runs, with a 95% interval
(:func:`predict`). Pure (typed rows in, predictions out)."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.comparisons import across
from harness.analysis.scale import scaling
from harness.contract.records import CellRow
from harness.formulas import prediction
from harness.formulas.across_runs import RunSpread, Side, Term
from harness.spec.cell import Cell

WIRE_S = 8 / 1e9
"""Seconds per byte over a link of 1 Gbit/s."""

GB = 1e-9
"""Bytes as GB: gamma's feature (gamma in s per GB handled, ns per byte)."""

SCALAR_BYTES = 4
"""A reduced loss or metric: one float32."""

NODE_COUNTS = (2, 4, 8, 16, 32, 64)
"""The node counts of the answer for N nodes."""

LINK_TOLERANCE = 0.25
"""Runs whose measured links lie within ±25% of their median are one link setting: htb shapes a
link to its rate within a few percent, and the settings users try differ by 2.5x or more."""


@dataclass(frozen=True)
class LinkSetting:
    """A link setting: runs whose measured links (Gbit/s) lie within ±:data:`LINK_TOLERANCE` of
    their median ``gbps``."""

    gbps: float
    run_ids: tuple[str, ...]
    links: tuple[float, ...]
    """Each run's measured link, Gbit/s (in ``run_ids``' order)."""

    @property
    def label(self) -> str:
        """``0.94 Gbit/s``, ``9.41 Gbit/s``, ``23.5 Gbit/s``."""
        return f"{self.gbps:.3g} Gbit/s"


def group_links(links: Mapping[str, float], tolerance: float = LINK_TOLERANCE) -> tuple[LinkSetting, ...]:
    """Run id -> measured Gbit/s as link settings, slowest first (module doc)."""
    groups: list[list[tuple[str, float]]] = []
    for run_id, gbps in sorted(links.items(), key=lambda kv: (kv[1], kv[0])):
        joined = [*groups[-1], (run_id, gbps)] if groups else []
        if joined and _within([g for _, g in joined], tolerance):
            groups[-1] = joined
        else:
            groups.append([(run_id, gbps)])
    return tuple(
        LinkSetting(
            statistics.median(g for _, g in group), tuple(r for r, _ in group), tuple(g for _, g in group)
        )
        for group in groups
    )


def _within(values: Sequence[float], tolerance: float) -> bool:
    m = statistics.median(values)
    return all(abs(v / m - 1) <= tolerance for v in values)


Features = tuple[float, float, float]
"""A cost's (round trips or ring steps, its wire time at 1x the measured link (s), GB handled)."""


@dataclass(frozen=True)
class LinkFit:
    """t = a x1 + kappa x2 + gamma x3 fitted to costs timed apart (a: seconds per round trip or
    ring step; kappa: the wire time's multiplier; gamma: s per GB handled), with the covariance of
    the three, the relative residuals' RMS, its df, the rows it rests on, and the residual step
    (c or d, s/update) per configuration's cell id (``rests``: its rows' values) and the mean over
    configurations (``rest_s``)."""

    coef: Features
    cov: tuple[Features, Features, Features]
    rms: float
    df: int
    rows: int
    rests: Mapping[str, tuple[float, ...]]
    rest_s: float

    def time_s(self, x: Features) -> float:
        return float(np.dot(self.coef, x))

    def variance(self, x: Features) -> float:
        """var of :meth:`time_s` (s^2) from the covariance."""
        return float(np.asarray(x) @ np.asarray(self.cov) @ np.asarray(x))

    def rest(self, cell_id: str) -> float:
        """The configuration's residual step (s/update), or the strategy's mean without its rows."""
        mine = self.rests.get(cell_id)
        return statistics.mean(mine) if mine else self.rest_s

    def rest_term(self, cell_id: str, step: float, runs: int) -> Term | None:
        """The rest's scatter over rows as a term of var log step: a mean of ``runs`` new runs
        against the mean of n rows, var x (1/n + 1/runs) / step^2, n - 1 df; None below 2 rows."""
        mine = self.rests.get(cell_id, ())
        if len(mine) < 2:
            return None
        var = statistics.variance(mine) * (1 / len(mine) + 1 / runs) / step**2
        return Term("rest", 1.0, var, len(mine) - 1)


def ring(n: int, nbytes: float, gbps: float) -> Features:
    """The features of a ring all-reduce of ``nbytes`` among ``n`` over a link of ``gbps``."""
    sent = 2 * (n - 1) / n * nbytes
    return 2 * (n - 1), sent * WIRE_S / gbps, sent * GB


def served(nbytes: float, gbps: float, servers: int = 1) -> Features:
    """The features of an update's reads and updates of ``nbytes`` of variables over ``servers``."""
    sent = 2 * nbytes / servers
    return 1.0, sent * WIRE_S / gbps, sent * GB


@dataclass(frozen=True)
class Config:
    """What the model scales: a multi-node configuration's cell id, model, strategy, examples per
    update of one worker (``batch``), gradient bytes, scalar reductions per update (q), and its
    one-node 1-worker side (examples/s over its runs) with that side's cell id."""

    cell_id: str
    model: str
    strategy: str
    batch: int
    nbytes: int
    reductions: float
    base: Side
    base_cell_id: str

    @property
    def step1_s(self) -> float:
        """step(1): the one-node 1-worker update (s)."""
        return self.batch / self.base.value

    def workers(self, nodes: int) -> int:
        """Workers on ``nodes`` nodes: one per node, less a parameter server's node."""
        return nodes - ACROSS[self.strategy].server_nodes


def baseline_config(row: CellRow) -> Cell:
    """The one-node 1-worker cell whose step is step(1) for ``row``: its configuration under
    MultiWorkerMirrored (a parameter-server worker's own update runs the same step)."""
    return dataclasses.replace(scaling.config_of(row.cell), strategy="multi_worker_mirrored")


def config_of(row: CellRow, rows: Sequence[CellRow], fitted: RunSpread) -> Config | None:
    """``row``'s :class:`Config`, its side from the one-node 1-worker rows of
    :func:`baseline_config` in ``rows`` (each run's newest) under ``fitted``; None without one."""
    ones = [
        r
        for r in scaling.same_config(rows, baseline_config(row))
        if r.cell.replicas * r.cell.workers == 1 and scaling.one_node(r)
    ]
    if not ones:
        return None
    newest = list({r.run.run_id: r for r in ones}.values())
    return Config(
        row.cell.cell_id,
        row.cell.model,
        row.cell.strategy,
        newest[-1].cell.effective_batch,
        scaling.gradient_bytes(row.cell.model, row),
        _scalars(row),
        across.side(newest, fitted),
        newest[-1].cell.cell_id,
    )


def _scalars(row: CellRow) -> float:
    """q: the scalar reductions per update beside the gradients' (the custom loop's loss)."""
    return max(0.0, (row.updates.allreduces_per_update or 1.0) - 1)


def parts_of(row: CellRow, nbytes: int) -> list[tuple[Features, float]]:
    """The row's costs across the link timed apart: (features, seconds) per cost."""
    gbps = float(row.ran.link_gbps or math.nan)
    timed = ACROSS[row.cell.strategy].parts(row, nbytes, gbps)
    return [(x, float(t)) for x, t in timed if t is not None and t > 0 and math.isfinite(gbps)]


def _ring_parts(row: CellRow, nbytes: int, gbps: float) -> list[tuple[Features, float | None]]:
    b, n = row.breakdown, row.cell.workers
    return [(ring(n, nbytes, gbps), b.allreduce_s), (ring(n, SCALAR_BYTES, gbps), b.reduce_s)]


def _served_parts(row: CellRow, nbytes: int, gbps: float) -> list[tuple[Features, float | None]]:
    b = row.breakdown
    both = None if b.ps_read_s is None or b.ps_update_s is None else b.ps_read_s + b.ps_update_s
    return [(served(nbytes, gbps, row.cell.ps), both)]


def _ring_features(config: Config, nodes: int, gbps: float) -> Features:
    x, y, q = ring(nodes, config.nbytes, gbps), ring(nodes, SCALAR_BYTES, gbps), config.reductions
    return x[0] + q * y[0], x[1] + q * y[1], x[2] + q * y[2]


def _served_features(config: Config, nodes: int, gbps: float) -> Features:
    return served(config.nbytes, gbps)


@dataclass(frozen=True)
class Across:
    """How a strategy's update crosses the link: its costs timed apart in a row (features and
    seconds, None where not timed), a worker's features per update on N nodes, what the fitted
    latency counts, the nodes that run no worker, and whether one server's link bounds them all."""

    parts: Callable[[CellRow, int, float], list[tuple[Features, float | None]]]
    features: Callable[[Config, int, float], Features]
    trips: str
    server_nodes: int
    served: bool


ACROSS: Mapping[str, Across] = {
    "multi_worker_mirrored": Across(_ring_parts, _ring_features, "latency per ring step", 0, False),
    "parameter_server": Across(_served_parts, _served_features, "round trips per update", 1, True),
}
"""The strategies modelled across nodes (module doc), one entry each."""


def crossing_s(row: CellRow) -> float | None:
    """The row's costs across the link timed apart, as its update pays them (s/update): the
    gradient all-reduce and q scalar reductions, or the reads plus updates; None where not timed."""
    q = _scalars(row)
    times = [t for _, t in ACROSS[row.cell.strategy].parts(row, 0, 1.0)]
    if times[0] is None:
        return None
    return times[0] + q * sum(t or 0.0 for t in times[1:])


def features(config: Config, nodes: int, gbps: float) -> Features:
    """A worker's costs across the link per update on ``nodes`` nodes at ``gbps`` (module doc)."""
    return ACROSS[config.strategy].features(config, nodes, gbps)


def step_s(config: Config, link: LinkFit, nodes: int, gbps: float) -> float:
    """A worker's step (s/update) on ``nodes`` nodes at ``gbps`` (module doc)."""
    return config.step1_s + link.time_s(features(config, nodes, gbps)) + link.rest(config.cell_id)


def link_bound(config: Config, link: LinkFit, gbps: float, servers: int = 1) -> float:
    """The parameter server's bound by its servers' links (examples/s); infinite for all-reduce."""
    kappa = link.coef[1]
    if not ACROSS[config.strategy].served or not kappa:
        return math.inf
    return servers * gbps / (WIRE_S * kappa * config.nbytes) * config.batch


def throughput(config: Config, link: LinkFit, nodes: int, gbps: float) -> float:
    """Examples/s on ``nodes`` nodes at ``gbps``: the workers', within the server's link."""
    workers = config.workers(nodes) * config.batch / step_s(config, link, nodes, gbps)
    return min(workers, link_bound(config, link, gbps))


def measured_step_s(row: CellRow, config: Config) -> float:
    """A worker's step as measured (s/update): its examples per update x workers / examples/s."""
    return config.batch * row.cell.workers / float(row.examples_per_sec.value or math.nan)


def fit(
    rows: Sequence[CellRow],
    configs: Mapping[str, Config],
    strategy: str,
    steps: Sequence[CellRow] | None = None,
) -> LinkFit | None:
    """``strategy``'s coefficients over the multi-node ``rows`` with a config in ``configs`` (by cell
    id): a, kappa and gamma fitted to their parts timed apart, each configuration's rest the mean of
    what those leave of its measured steps in ``steps`` (default ``rows``); None with fewer than 4
    parts (no df)."""

    def of(among: Sequence[CellRow]) -> list[CellRow]:
        return [r for r in among if r.cell.strategy == strategy and r.cell.cell_id in configs]

    mine = of(rows)
    points = [p for r in mine for p in parts_of(r, configs[r.cell.cell_id].nbytes)]
    if len(points) < 4:
        return None
    x, _, cov, df, rms = prediction.fit_relative(
        np.array([p for p, _ in points], dtype=float), np.array([t for _, t in points], dtype=float)
    )
    coef = (float(x[0]), float(x[1]), float(x[2]))
    covs = tuple((float(c[0]), float(c[1]), float(c[2])) for c in cov)
    bare = LinkFit(coef, (covs[0], covs[1], covs[2]), rms, df, len(mine), {}, 0.0)
    rests: dict[str, list[float]] = {}
    for r in mine if steps is None else of(steps):
        c = configs[r.cell.cell_id]
        left = measured_step_s(r, c) - step_s(c, bare, r.ran.nodes or 2, float(r.ran.link_gbps or math.nan))
        rests.setdefault(c.cell_id, []).append(left)
    means = [statistics.mean(v) for v in rests.values()]
    return dataclasses.replace(
        bare, rests={k: tuple(v) for k, v in rests.items()}, rest_s=statistics.mean(means)
    )


@dataclass(frozen=True)
class Predicted:
    """The model's figure (examples/s) with its 95% interval, and its step's parts (s/update)."""

    value: float
    low: float
    high: float
    step1_s: float
    link_s: float
    rest_s: float


def predict(
    config: Config, link: LinkFit, nodes: int, gbps: float, model: Term | None, runs: int = 1
) -> Predicted:
    """The figure at ``nodes`` and ``gbps`` with its interval: step(1)'s CI over its runs, the fit's
    covariance (its df), the rest's scatter for a mean of ``runs`` runs and the ``model`` error,
    each weighted by its share of the step."""
    x = features(config, nodes, gbps)
    step = step_s(config, link, nodes, gbps)
    value = throughput(config, link, nodes, gbps)
    share = config.step1_s / step
    terms = [
        *(Term(t.name, t.weight * share**2, t.variance, t.df) for t in config.base.terms),
        Term("link fit", 1.0, link.variance(x) / step**2, link.df),
        *[t for t in (link.rest_term(config.cell_id, step, runs), model) if t],
    ]
    low, high = prediction.interval(value, terms)
    return Predicted(value, low, high, config.step1_s, link.time_s(x), link.rest(config.cell_id))


@dataclass(frozen=True)
class Checked:
    """Every (cell id, setting label) measured on 2 or more nodes, predicted with the rest from the
    other settings' runs and the model error of the strategy's other settings; and each strategy's
    log(measured / predicted) over all its checks (the answer's model error)."""

    points: Mapping[tuple[str, str], Predicted]
    errors: Mapping[str, tuple[float, ...]]


def checks(
    multi: Sequence[CellRow],
    configs: Mapping[str, Config],
    settings: Sequence[LinkSetting],
    fitted: RunSpread,
) -> Checked:
    """:class:`Checked` over the multi-node ``multi`` rows of ``configs`` at ``settings``."""
    found: dict[tuple[str, str], tuple[tuple[Config, LinkFit, int, float], int, float]] = {}
    for s in settings:
        train = [r for r in multi if r.run.run_id not in s.run_ids]
        fits = {k: fit(multi, configs, k, train) for k in ACROSS}
        for cid, config in configs.items():
            mine = [r for r in multi if r.cell.cell_id == cid and r.run.run_id in s.run_ids]
            if mine and (link := fits[config.strategy]) is not None:
                at = (config, link, mine[-1].ran.nodes or 2, s.gbps)
                error = math.log(across.side(mine, fitted).value / predict(*at, None).value)
                found[(cid, s.label)] = (at, len(mine), error)
    errors = {k: tuple(e for (c, *_), _, e in found.values() if c.strategy == k) for k in ACROSS}

    def others(strategy: str, label: str) -> Term | None:
        return prediction.model_error(
            [e for (_, lab), ((c, *_), _, e) in found.items() if c.strategy == strategy and lab != label]
        )

    points = {key: predict(*at, others(at[0].strategy, key[1]), runs) for key, (at, runs, _) in found.items()}
    return Checked(points, errors)


@dataclass(frozen=True)
class NodesLine:
    """One node count of the answer: the prediction, its efficiency with its range (throughput /
    (nodes x step(1)'s throughput)), and whether the count was measured."""

    nodes: int
    predicted: Predicted
    efficiency: tuple[float, float, float]
    measured: bool


@dataclass(frozen=True)
class NodesAnswer:
    """The answer for N nodes of one configuration at one link: a line per count, the first count
    whose step is link-bound (:func:`_link_bound`; None: none of the counts), the slowest link
    (Gbit/s) at which 2 nodes beat one node's best (None: none up to 1,000 Gbit/s), that best's
    label and examples/s, and the fewest of the counts that beat it at this link (None: none)."""

    gbps: float
    lines: tuple[NodesLine, ...]
    link_bound_from: int | None
    paying_gbps: float | None
    best_label: str
    best_examples_per_sec: float
    fewest: int | None


def answer(
    config: Config,
    link: LinkFit,
    errors: Sequence[float],
    gbps: float,
    measured: frozenset[int],
    best: tuple[str, float],
    counts: Sequence[int] = NODE_COUNTS,
) -> NodesAnswer:
    """The answer for ``counts`` nodes at ``gbps`` (``measured``: the counts measured), with the
    model error over ``errors``; ``best``: one node's best configuration (label, examples/s)."""
    model = prediction.model_error(errors)
    one = config.base.value
    lines = []
    for n in counts:
        p = predict(config, link, n, gbps, model)
        eff = tuple(x / (n * one) for x in (p.value, p.low, p.high))
        lines.append(NodesLine(n, p, (eff[0], eff[1], eff[2]), n in measured))
    bound = next((x.nodes for x in lines if _link_bound(config, link, x.nodes, gbps)), None)
    fewest = next((x.nodes for x in lines if x.predicted.value > best[1]), None)
    return NodesAnswer(gbps, tuple(lines), bound, paying_link(config, link, best[1]), *best, fewest)


def _link_bound(config: Config, link: LinkFit, nodes: int, gbps: float) -> bool:
    """Whether the link bounds the step at ``nodes``: the server's link below the workers' pace
    (a parameter server), or the costs across the link (with the rest) above the local step."""
    step = step_s(config, link, nodes, gbps)
    if ACROSS[config.strategy].served:
        return link_bound(config, link, gbps) < config.workers(nodes) * config.batch / step
    return step - config.step1_s > config.step1_s


def paying_link(config: Config, link: LinkFit, best: float, nodes: int = 2) -> float | None:
    """The slowest link (Gbit/s, to 3 digits) at which ``nodes`` nodes train faster than ``best``
    examples/s; None when none up to 1,000 Gbit/s does (throughput grows with the link)."""
    low, high = 1e-3, 1e3
    if throughput(config, link, nodes, high) <= best:
        return None
    for _ in range(60):  # bisection in log space
        mid = math.sqrt(low * high)
        low, high = (mid, high) if throughput(config, link, nodes, mid) <= best else (low, mid)
    return float(f"{high:.3g}")


def source(config: Config, link: LinkFit) -> str:
    """Where a figure's coefficients come from, in words."""
    a, (alpha, kappa, gamma) = ACROSS[config.strategy].trips, link.coef
    return (
        f"step(1) {config.step1_s * 1e3:.3g} ms from {config.base_cell_id} on one node "
        f"({config.base.runs} runs); across the link, fitted to the parts timed apart in "
        f"{link.rows} multi-node rows: {a} {alpha * 1e6:.0f} us, wire time x{kappa:.2f} of the "
        f"measured link's, CPU {gamma:.2g} ns per byte handled (relative RMS {link.rms:.0%}, "
        f"{link.df} df), and {link.rest(config.cell_id) * 1e3:.2g} ms per update the parts leave "
        "of this configuration's measured step"
    )
