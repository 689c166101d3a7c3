"""predict's scaling model: throughput and efficiency at n devices of one machine from a measured
1-device cell and its all-reduce's cost, T(n, m) = 2(n - 1) alpha + 2(n - 1)/n x m x beta (s),
step(n) = step(1) x s(n) + T(n, gradient bytes) with s(n) the core share, and a 95% interval
(:mod:`harness.formulas.prediction`). Pure (rows in, predictions out). The model, its assumptions
and which rows it reads: docs/how-to/hardware.md, "Predict scaling from the all-reduce"; across
nodes, :mod:`harness.analysis.scale.scale_out`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.contract.columns import Estimate
from harness.contract.records import Axes, CellRow, Status
from harness.errors import HarnessError
from harness.formulas import prediction
from harness.formulas.across_runs import Term
from harness.formulas.prediction import log_sd
from harness.spec.axes import BASELINE, DEVICE_AXES, key_axes
from harness.spec.cell import Cell
from harness.spec.collectives import FLOAT32_BYTES, GRADIENT_SHAPES
from harness.spec.strategies import ALLREDUCE_STRATEGIES, STRATEGIES
from harness.spec.words import describe, flags


@dataclass(frozen=True)
class AlphaBeta:
    """Ring all-reduce cost: ``alpha_s`` per ring step, ``beta_s_per_byte`` per byte over a link;
    of a fit, over its rows: ``rel_rms`` the relative RMS error, ``cov`` the covariance of (alpha,
    beta) (s^2, s^2/B, s^2/B^2), ``resid`` the relative residuals' mean square, ``df`` theirs."""

    alpha_s: float
    beta_s_per_byte: float
    source: str
    rel_rms: float = 0.0
    cov: tuple[float, float, float] = (0.0, 0.0, 0.0)
    resid: float = 0.0
    df: float = math.inf

    def time_s(self, n: int, nbytes: float) -> float:
        """T(n, m) of the module doc; 0 for one participant (no reduction)."""
        if n <= 1:
            return 0.0
        return 2 * (n - 1) * self.alpha_s + 2 * (n - 1) / n * nbytes * self.beta_s_per_byte

    def log_var(self, n: int, nbytes: float) -> float:
        """var log T(n, m) from :attr:`cov` (:mod:`harness.formulas.prediction`); 0 at n = 1."""
        a, b = 2 * (n - 1), 2 * (n - 1) / n * nbytes
        var_a, c, var_b = self.cov
        return (a * a * var_a + 2 * a * b * c + b * b * var_b) / self.time_s(n, nbytes) ** 2 if n > 1 else 0.0

    @property
    def bandwidth_gbps(self) -> float:
        """The link bandwidth this beta stands for (Gb/s)."""
        return 8 / (self.beta_s_per_byte * 1e9) if self.beta_s_per_byte > 0 else math.inf


def fit_alpha_beta(points: Sequence[tuple[int, float, float]], source: str = "fit") -> AlphaBeta:
    """Non-negative least squares of T(n, m) to ``points`` of (n, bytes, seconds), weighted
    relatively (each point's error as a fraction of its time, so 4 KiB counts as much as 64 MiB)."""
    pts = [(n, m, t) for n, m, t in points if n > 1 and t > 0]
    if len(pts) < 2:
        raise ValueError(f"an alpha-beta fit needs 2 or more all-reduce times; received {len(pts)}")
    n, m, t = (np.asarray(v, dtype=float) for v in zip(*pts, strict=True))
    x, s2, cov, df, rms = prediction.fit_relative(np.column_stack([2 * (n - 1), 2 * (n - 1) / n * m]), t)
    covs = (float(cov[0, 0]), float(cov[0, 1]), float(cov[1, 1]))
    return AlphaBeta(float(x[0]), float(x[1]), f"{source}: {len(pts)} rows", rms, covs, s2, df)


def gradient_bytes(model: str, row: CellRow | None = None) -> int:
    """Bytes of one all-reduce of the model's gradients: counted by the worker (the row's
    ``gradient_bytes``), or, for an MNIST model's row stored before that column, its hand list
    (float32, one value per parameter); HarnessError when neither is known."""
    counted = None if row is None else row.flops.gradient_bytes
    if counted is not None:
        return counted
    if model not in GRADIENT_SHAPES:
        raise HarnessError(
            f"the size of {model}'s gradients is unknown: its rows predate the count; re-run it"
        )
    return FLOAT32_BYTES * sum(math.prod(s) for s in GRADIENT_SHAPES[model])


@dataclass(frozen=True)
class Baseline:
    """What the model needs from the measured 1-device cell: its step (s per update), examples per
    update, the cores it used of its host's (for devices that share them), and var log step with
    its df (from its CI)."""

    step_s: float
    effective_batch: int
    cores_used: int
    host_cores: int
    shares_cores: bool
    log_var: float = 0.0
    df: float = math.inf

    def share(self, n: int) -> float:
        """s(n) of the module doc."""
        if not self.shares_cores:
            return 1.0
        return max(1.0, n * self.cores_used / self.host_cores)


@dataclass(frozen=True)
class Prediction:
    """The model at n devices: step (s/update), throughput (examples/s), efficiency, the all-reduce's
    share of the step, where its time came from, and the throughput's 95% interval (examples/s)."""

    devices: int
    step_s: float
    examples_per_sec: float
    efficiency: float
    allreduce_s: float
    allreduce_from: str
    low: float = math.nan
    high: float = math.nan

    @property
    def allreduce_share(self) -> float:
        return self.allreduce_s / self.step_s


def predict(
    base: Baseline,
    n: int,
    allreduce_s: float,
    allreduce_from: str,
    allreduce_var: tuple[float, float] = (0.0, math.inf),
    model: Term | None = None,
) -> Prediction:
    """Step, throughput and efficiency at ``n`` devices (module doc) given the all-reduce time, and
    the interval from the baseline's CI, (var log T, df) and the ``model`` error (none at n = 1)."""
    t = allreduce_s if n > 1 else 0.0
    step = base.step_s * base.share(n) + t
    value = n * base.effective_batch / step
    terms = [
        Term("1-device step", (base.step_s * base.share(n) / step) ** 2, base.log_var, base.df),
        Term("all-reduce", (t / step) ** 2, *allreduce_var),
        *([model] if model and n > 1 else []),
    ]
    low, high = prediction.interval(value, terms)
    return Prediction(n, step, value, base.step_s / step, t, allreduce_from if n > 1 else "none", low, high)


def allreduce_time(
    n: int,
    model: str,
    cost: AlphaBeta,
    measured: Mapping[int, float] | None = None,
    row: CellRow | None = None,
) -> tuple[float, str]:
    """The gradient all-reduce's time at n: the collectives table's own measurement of the model's
    gradient set at n when there is one, else the alpha-beta cost of its gradient bytes
    (:func:`gradient_bytes`, from ``row`` where it counted them)."""
    if measured and n in measured:
        return measured[n], f"measured ({model} gradients)"
    return cost.time_s(n, gradient_bytes(model, row)), cost.source


def error(predicted: float, measured: float) -> float:
    """Relative prediction error (predicted - measured) / measured."""
    return (predicted - measured) / measured


def baseline_from_row(row: CellRow) -> Baseline:
    """A :class:`Baseline` from a 1-device cell row (examples_per_sec with its CI, effective_batch,
    device_kind, host_cores, cores_per_worker; the CI's df: its earlier runs, else processes - 1)."""
    m, e, spread = row.machine, row.examples_per_sec, row.spread
    host = (m.host_cores if m else None) or 1
    cores = row.ran.cores_per_worker or host
    batch = row.cell.effective_batch
    df = spread.ci_history_runs or (spread.processes or len(spread.process_examples_per_sec or ())) - 1
    return Baseline(
        batch / float(e.value or math.nan),
        batch,
        min(cores, host),
        host,
        not (m is not None and m.device_kind == "GPU"),
        log_sd(e.low, e.high, df) ** 2,
        df,
    )


def machine_keys(row: CellRow) -> dict[str, object]:
    """The columns cells and collectives share that say which machine measured a row, with the
    row's values: its machine id (the facts that tell machines apart, :mod:`harness.contract.machine`)
    where both tables record it, and for rows older than it the device and core count. Not the
    fingerprint: it hashes the thread settings, which local multi-worker cells set per worker count."""
    m = row.machine
    return {
        "machine_id": row.run.machine_id,
        "device_kind": m.device_kind if m else None,
        "device_name": m.device_name if m else None,
        "host_cores": m.host_cores if m else None,
    }


def same_machine(collectives: pd.DataFrame, cell: CellRow) -> pd.DataFrame:
    """The collectives rows (a DataFrame) measured on the machine of ``cell`` (a cell row): equal
    :func:`machine_keys` wherever both sides know them."""
    keep = np.ones(len(collectives), dtype=bool)
    for key, value in machine_keys(cell).items():
        if key in collectives and value is not None:
            column = collectives[key]
            keep &= (column.isna() | (column == value)).fillna(True).to_numpy(dtype=bool)
    return collectives[keep]


COLLECTIVES_HINT = "measure them with `python -m harness run --sweep collectives`"


def cost_from_table(
    collectives: Any, strategy: str, op: str, model: str, cell: CellRow | None = None
) -> tuple[AlphaBeta, dict[int, float], dict[int, tuple[float, float]]]:
    """The alpha-beta fit of the ok collectives rows (a DataFrame) of ``strategy`` [``op``] (those
    measured on ``cell``'s machine when it is given; the newest row per devices and payload), the
    measured all-reduces of ``model``'s gradient set (devices -> s) and their var log with its df
    (from their CI). HarnessError, naming the command that measures them, when fewer than 2 rows
    on 2 or more devices remain."""
    rows = collectives[
        (
            (collectives["status"] == Status.OK)
            & (collectives["strategy"] == strategy)
            & (collectives["op"] == op)
        )
        .fillna(False)
        .astype(bool)
    ]
    if rows.empty:
        raise HarnessError(
            f"no all-reduce times of {strategy} [{op}] in the collectives table: {COLLECTIVES_HINT}."
        )
    if cell is not None:
        here = same_machine(rows, cell)
        if here.empty:
            pairs = zip(rows["device_name"], rows["host_cores"], strict=True)
            theirs = sorted({f"{name} ({cores} cores)" for name, cores in pairs})
            raise HarnessError(
                f"the all-reduce times of {strategy} [{op}] were measured on {', '.join(theirs)}, "
                f"not on the 1-device cell's machine ({machine_keys(cell)['device_name']}, "
                f"{machine_keys(cell)['host_cores']} cores): {COLLECTIVES_HINT}."
            )
        rows = here
    rows = rows.sort_values("timestamp").drop_duplicates(["devices", "payload", "bytes"], keep="last")
    points = [p for p in zip(rows["devices"], rows["bytes"], rows["time_s"], strict=True) if p[0] > 1]
    if len(points) < 2:
        raise HarnessError(
            f"{len(points)} all-reduce time(s) of {strategy} [{op}] on 2 or more devices; the "
            f"alpha-beta fit needs 2 or more (sizes or device counts): {COLLECTIVES_HINT}."
        )
    own = rows[(rows["payload"] == model) & (rows["devices"] > 1)]
    none = pd.Series(math.nan, index=own.index)
    dfs = own.get("processes", none).fillna(0) - 1
    cis = zip(
        own["devices"], own.get("time_s_ci_low", none), own.get("time_s_ci_high", none), dfs, strict=True
    )
    spread = {int(n): (log_sd(low, high, df) ** 2, df) for n, low, high, df in cis}
    fit = fit_alpha_beta(points, f"alpha-beta fit of {strategy}[{op}]")
    return fit, dict(zip(own["devices"].astype(int), own["time_s"].astype(float), strict=True)), spread


def baseline_key(a: Axes | Cell) -> tuple[object, ...]:
    """What a row shares with its 1-device baseline, the efficiency baseline's key
    (:func:`harness.results.references.find_baseline`): its values of the axes of identity key
    ``baseline`` (:func:`harness.spec.axes.key_axes`: model, data, strategy, accumulation, loop,
    steps per execution, precision, XLA, loss, co-tenants, optimizer), then the per-replica batch
    (weak scaling)."""
    return (*_key_values(a).values(), a.per_replica_batch)


def _key_values(a: Axes | Cell) -> dict[str, object]:
    """A cell's or a stored row's values of the baseline key's axes, by axis name."""
    return {
        axis.name: getattr(a, axis.name if isinstance(a, Cell) else axis.row_column)
        for axis in key_axes(BASELINE)
    }


def config_of(a: Axes) -> Cell:
    """The 1-device cell of a stored row's configuration: its :func:`baseline_key` on one device
    (what ``compare-links`` asks :func:`predictions` for)."""
    return Cell.from_dict({**_key_values(a), "batch": a.per_replica_batch})


def one_node(row: CellRow) -> bool:
    """Whether the row was measured on one machine (``nodes`` 1: a local run; null: a row made
    elsewhere than a run's cells, e.g. ``ab``'s)."""
    return (row.ran.nodes or 1) <= 1


def same_config(rows: Sequence[CellRow], config: Cell) -> list[CellRow]:
    """The ok rows with a figure that share ``config``'s :func:`baseline_key` (any devices, any
    nodes), oldest first."""
    key = baseline_key(config)
    found = [
        r for r in rows if r.status == Status.OK and r.examples_per_sec.value and baseline_key(r.cell) == key
    ]
    return sorted(found, key=lambda r: r.run.timestamp)


def find_one_device(rows: Sequence[CellRow], config: Cell) -> CellRow | None:
    """The 1-device row (replicas x workers = 1) of ``config``'s :func:`same_config`: the newest
    measured on one node (:func:`one_node`), else the newest measured on several; None without one."""
    ones = [r for r in same_config(rows, config) if r.cell.replicas * r.cell.workers == 1]
    return max(ones, key=lambda r: (one_node(r), r.run.timestamp), default=None)


def measure_hint(config: Cell) -> str:
    """How to measure ``config``'s 1-device cell on one node: ``python -m harness run ...``."""
    axis = STRATEGIES[config.strategy].device_axis or DEVICE_AXES[0]
    return f"python -m harness run {flags(vars(config), vary=(axis, [1]))}"


@dataclass(frozen=True)
class Query:
    """What :func:`predictions` is asked (``predict``'s flags): ``config``, the 1-device cell whose
    configuration scales (its :func:`baseline_key` selects the rows); ``counts``, the device counts
    to predict along its strategy's device axis; ``op``, the all-reduce implementation priced (the
    value of the strategy's option axis)."""

    config: Cell
    counts: tuple[int, ...]
    op: str


def device_axes(strategy: str) -> tuple[str, str]:
    """(the axis that adds devices under ``strategy``, the other one, held at 1)."""
    first, second = DEVICE_AXES
    return (first, second) if STRATEGIES[strategy].device_axis == first else (second, first)


@dataclass(frozen=True)
class Line:
    """One device count: the prediction, and the newest measured row of the configuration there
    (its figure with its CI, examples/s) with the relative error (None where nothing was measured)
    and the model-error part of the interval (None: not calibrated)."""

    prediction: Prediction
    measured: Estimate | None
    error: float | None
    model: Term | None = None

    @property
    def inside(self) -> bool | None:
        """Whether the measured figure lies inside the prediction's interval (None: no figure or
        no interval)."""
        m, p = self.measured, self.prediction
        if m is None or m.value is None or math.isnan(p.low + p.high):
            return None
        return p.low <= m.value <= p.high


@dataclass(frozen=True)
class Predictions:
    """:func:`predictions`' answer: the 1-device row it scaled, the all-reduce cost it priced, one
    :class:`Line` per device count, and every check's log(measured / predicted): one per row
    measured on one node on 2 or more devices."""

    baseline: CellRow
    cost: AlphaBeta
    lines: tuple[Line, ...]
    checks: tuple[float, ...] = ()

    @property
    def method(self) -> str:
        """How each interval was taken: its three parts and their sources, in one line."""
        b, c, e = self.baseline, self.cost, self.checks
        fit = f"{c.source} (relative RMS {c.rel_rms:.0%}, {c.df:g} df)"
        model = (
            f"model error: RMS {math.sqrt(sum(x * x for x in e) / len(e)):.0%} of log(measured / predicted) over "
            f"{len(e)} measured point(s) on several devices, each count's own left out"
            if e
            else "the model's own error is not calibrated: no measured point on several devices"
        )
        return (
            f"How each 95% interval was taken: 1-device step: CI of run {b.run.run_id} (sd = log half-width / t at "
            f"{baseline_from_row(b).df:g} df); all-reduce: {fit}; {model}."
        )


def missing_baseline(config: Cell, where: str) -> str:
    """Why there is no prediction: the 1-device cell looked for, where, and how to measure it."""
    said = [a.name for a in key_axes(BASELINE) if a.name not in ("model", "strategy")]
    looked = describe(vars(config), only=[*said, "batch"], always=True)
    return (
        f"no measured 1-device cell of {config.model} {config.strategy} ({looked}) under {where}; "
        f"measure it first, e.g. `python -m harness run --sweep validation` or `{measure_hint(config)}`."
    )


def predictions(
    rows: Sequence[CellRow], query: Query, collectives: Any = None, where: str = "the results"
) -> Predictions:
    """``query``'s prediction at each of its device counts from its 1-device row
    (:func:`find_one_device`) and :func:`cost_from_table` over ``collectives`` (a DataFrame),
    beside the newest row of the same :func:`baseline_key` at each count measured on one node
    where there is one. Each interval's model error is from the checks (:class:`Predictions`) other
    than that point's own rows and the row shown. HarnessError without the 1-device row (naming
    ``where`` it was looked for and the command that measures it) or the all-reduce times."""
    config = query.config
    base_row = find_one_device(rows, config)
    if base_row is None:
        raise HarnessError(missing_baseline(config, where))
    base = baseline_from_row(base_row)
    cost, measured_ar, spread = cost_from_table(
        collectives, config.strategy, query.op, config.model, base_row
    )

    def at(n: int, model: Term | None = None) -> Prediction:
        seconds, source = allreduce_time(n, config.model, cost, measured_ar, base_row)
        var = spread.get(n) or (cost.log_var(n, gradient_bytes(config.model, base_row)), cost.df)
        return predict(base, n, seconds, source, var, model)

    here = [(n, r) for n, r in _at_counts(query, same_config(rows, config)) if one_node(r)]
    # the checks: (devices, log(measured / predicted)) of each row on 2 or more devices
    found = [
        (n, math.log(float(r.examples_per_sec.value or math.nan) / at(n).examples_per_sec))
        for n, r in here
        if n > 1
    ]
    lines = []
    for n in query.counts:
        newest = max((r for m, r in here if m == n), key=lambda r: r.run.timestamp, default=None)
        left = [e for m, e in found if m != n and n > 1]
        model = prediction.model_error(left)
        p = at(n, model=model)
        e = None if newest is None else newest.examples_per_sec
        lines.append(
            Line(p, e, None if e is None else error(p.examples_per_sec, float(e.value or math.nan)), model)
        )
    return Predictions(base_row, cost, tuple(lines), tuple(e for _, e in found))


def _at_counts(query: Query, rows: Sequence[CellRow]) -> list[tuple[int, CellRow]]:
    """(devices, row) along the query's device axis, the other at 1, at its op (or none on one)."""
    axis, other = device_axes(query.config.strategy)
    option = STRATEGIES[query.config.strategy].option_axis
    found = [(getattr(r.cell, axis), r) for r in rows if getattr(r.cell, other) == 1]
    return [
        (n, r) for n, r in found if n == 1 or option is None or getattr(r.cell, option) in (query.op, "none")
    ]


def report_predictions(rows: Sequence[CellRow], collectives: Any) -> pd.DataFrame:
    """For each measured weak-scaling multi-device mirrored / multi_worker_mirrored row with its
    1-device baseline in ``rows``, one line: its model, cell_id, series (strategy[op]), config (what
    besides the topology the baseline fixes, e.g. ``b64/acc1/ctl/spe10/float32``), baseline (the
    baseline's examples/s), devices, measured examples/s with its 95% CI (measured_ci_low / _high),
    the predicted examples/s from that baseline and the collectives rows (a DataFrame) of its op
    measured on its machine, the relative error and allreduce_from (where the all-reduce time came
    from). Rows whose op has too few all-reduce times are left out; no lines without collectives."""
    if collectives is None or collectives.empty:
        return pd.DataFrame()
    by_id = {r.cell.cell_id: r for r in rows if r.status == Status.OK}
    out = []
    for r in by_id.values():
        a, e = r.cell, r.examples_per_sec
        n, op = a.replicas * a.workers, STRATEGIES[a.strategy].option_in(vars(a))
        base = by_id.get(r.efficiency.baseline_cell_id or "")
        if a.strategy not in ALLREDUCE_STRATEGIES or n < 2 or base is None or a.scaling == "strong":
            continue
        try:
            fit, measured_ar, _ = cost_from_table(collectives, a.strategy, op, a.model, base)
            seconds, source = allreduce_time(n, a.model, fit, measured_ar, base)
        except HarnessError:
            continue
        predicted = predict(baseline_from_row(base), n, seconds, source).examples_per_sec
        measured, b = float(e.value or math.nan), base.cell
        config = (
            f"b{b.per_replica_batch}/acc{b.accum_steps}/{b.loop}/spe{b.steps_per_execution}/{b.precision}"
        )
        out.append(
            {
                "model": a.model,
                "cell_id": a.cell_id,
                "series": f"{a.strategy}[{op}]",
                "config": config,
                "baseline": float(base.examples_per_sec.value or math.nan),
                "devices": n,
                "measured": measured,
                "measured_ci_low": measured if e.low is None else e.low,
                "measured_ci_high": measured if e.high is None else e.high,
                "predicted": predicted,
                "error": error(predicted, measured),
                "allreduce_from": source,
            }
        )
    return pd.DataFrame(out)
