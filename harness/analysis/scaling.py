"""A scaling model: throughput and efficiency at n devices from a measured 1-device cell and the cost
of its all-reduce. Pure (rows in, predictions out).

**All-reduce cost** (the alpha-beta model of a ring all-reduce of m bytes among n participants):

    T(n, m) = 2(n - 1) x alpha + 2(n - 1) / n x m x beta        [s]

alpha: latency per ring step (s); beta: seconds per byte over one link. Fitted by non-negative
least squares to the ok rows of the collectives table for the strategy and op
(:func:`fit_alpha_beta`), or given for a link you lack (``--link-gbps G --latency-us L``: beta =
8 / (G x 1e9), alpha = L x 1e-6; :func:`link_alpha_beta`). The model's own gradient set measured at
n replaces the fit (several tensors cost more than one of the same bytes). Only rows of the 1-device
cell's machine count (:func:`same_machine`), the newest per device count and payload; fewer than 2
on 2 or more devices is a HarnessError naming ``python -m harness run --sweep collectives``.

**Step at n devices** (weak scaling: each device trains the 1-device cell's update):

    s(n)      = max(1, n x c1 / C)   devices that share one host's C cores, c1 of them used by
                                     the 1-device cell (logical CPU devices, local workers);
                1                    devices with their own compute (GPUs, separate hosts)
    step(n)   = step(1) x s(n) + T(n, gradient bytes)
    throughput(n) = n x effective_batch(1) / step(n);   efficiency(n) = step(1) / step(n)

Assumptions, each a way to be wrong: the 1-device step is all local work and grows only by core
sharing; the all-reduce does not overlap the backward pass (NCCL partly does: then pessimistic);
one all-reduce per update (the ctl loop's scalar loss reduce left out); n devices' input is as fast
per device as one's; across nodes this machine's localhost alpha is no guide (give --latency-us).

**Which rows** (:func:`predictions`, for ``predict`` and ``compare-links`` through a
:class:`Query`): baseline and n-device rows share :func:`baseline_key` (identity key ``baseline``,
:func:`harness.spec.axes.key_axes`, and the per-replica batch), so rows of other XLA, data, loss or
optimizer never mix; the baseline is the newest 1-device row on one node (:func:`find_one_device`),
else the newest on several."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize

from harness.contract.columns import Estimate
from harness.contract.records import Axes, CellRow, Status
from harness.errors import HarnessError
from harness.spec.axes import BASELINE, DEVICE_AXES, OPTION_AXES, key_axes
from harness.spec.cell import Cell
from harness.spec.collectives import FLOAT32_BYTES, GRADIENT_SHAPES
from harness.spec.strategies import ALLREDUCE_STRATEGIES, STRATEGIES
from harness.spec.words import describe, flags


@dataclass(frozen=True)
class AlphaBeta:
    """Ring all-reduce cost: ``alpha_s`` per ring step, ``beta_s_per_byte`` per byte over a link;
    ``rel_rms``: relative RMS error of the fit over its rows (0 for a described link)."""

    alpha_s: float
    beta_s_per_byte: float
    source: str
    rel_rms: float = 0.0

    def time_s(self, n: int, nbytes: float) -> float:
        """T(n, m) of the module doc; 0 for one participant (no reduction)."""
        if n <= 1:
            return 0.0
        return 2 * (n - 1) * self.alpha_s + 2 * (n - 1) / n * nbytes * self.beta_s_per_byte

    @property
    def bandwidth_gbps(self) -> float:
        """The link bandwidth this beta stands for (Gb/s)."""
        return 8 / (self.beta_s_per_byte * 1e9) if self.beta_s_per_byte > 0 else math.inf


def link_alpha_beta(gbps: float, latency_us: float) -> AlphaBeta:
    """The cost of a described link: ``gbps`` gigabits per second, ``latency_us`` per ring step."""
    return AlphaBeta(latency_us * 1e-6, 8 / (gbps * 1e9), f"link {gbps:g} Gb/s, {latency_us:g} us")


def fit_alpha_beta(points: Sequence[tuple[int, float, float]], source: str = "fit") -> AlphaBeta:
    """Non-negative least squares of T(n, m) to ``points`` of (n, bytes, seconds), weighted
    relatively (each point's error as a fraction of its time, so 4 KiB counts as much as 64 MiB)."""
    pts = [(n, m, t) for n, m, t in points if n > 1 and t > 0]
    if len(pts) < 2:
        raise ValueError(f"an alpha-beta fit needs 2 or more all-reduce times; received {len(pts)}")
    n, m, t = (np.asarray(v, dtype=float) for v in zip(*pts, strict=True))
    design = np.column_stack([2 * (n - 1), 2 * (n - 1) / n * m]) / t[:, None]
    (alpha, beta), _ = optimize.nnls(design, np.ones_like(t))
    fitted = AlphaBeta(float(alpha), float(beta), source)
    predicted = np.array([fitted.time_s(int(a), b) for a, b in zip(n, m, strict=True)])
    rms = float(np.sqrt(np.mean(((predicted - t) / t) ** 2)))
    return AlphaBeta(float(alpha), float(beta), f"{source}: {len(pts)} rows", rms)


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
    update, and the cores it used of its host's (for devices that share them)."""

    step_s: float
    effective_batch: int
    cores_used: int
    host_cores: int
    shares_cores: bool

    def share(self, n: int) -> float:
        """s(n) of the module doc."""
        if not self.shares_cores:
            return 1.0
        return max(1.0, n * self.cores_used / self.host_cores)


@dataclass(frozen=True)
class Prediction:
    """The model at n devices: step (s/update), throughput (examples/s), efficiency, the all-reduce's
    share of the step, and where its time came from."""

    devices: int
    step_s: float
    examples_per_sec: float
    efficiency: float
    allreduce_s: float
    allreduce_from: str

    @property
    def allreduce_share(self) -> float:
        return self.allreduce_s / self.step_s


def predict(base: Baseline, n: int, allreduce_s: float, allreduce_from: str) -> Prediction:
    """Step, throughput and efficiency at ``n`` devices (module doc) given the all-reduce time."""
    step = base.step_s * base.share(n) + (allreduce_s if n > 1 else 0.0)
    return Prediction(
        n,
        step,
        n * base.effective_batch / step,
        base.step_s / step,
        allreduce_s if n > 1 else 0.0,
        allreduce_from if n > 1 else "none",
    )


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
    """A :class:`Baseline` from a 1-device cell row (examples_per_sec, effective_batch, device_kind,
    host_cores, cores_per_worker)."""
    m = row.machine
    host = (m.host_cores if m else None) or 1
    cores = row.ran.cores_per_worker or host
    batch = row.cell.effective_batch
    return Baseline(
        batch / float(row.examples_per_sec.value or math.nan),
        batch,
        min(cores, host),
        host,
        shares_cores=not (m is not None and m.device_kind == "GPU"),
    )


def op_of(a: Axes) -> str:
    """The cell's all-reduce implementation: the value of its strategy's option axis."""
    kind = STRATEGIES[a.strategy]
    return str(kind.option_in({name: getattr(a, name) for name in OPTION_AXES}))


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


COLLECTIVES_HINT = (
    "measure them with `python -m harness run --sweep collectives` (or describe a "
    "link with --link-gbps and --latency-us)"
)


def cost_from_table(
    collectives: Any, strategy: str, op: str, model: str, cell: CellRow | None = None
) -> tuple[AlphaBeta, dict[int, float]]:
    """The alpha-beta fit of the ok collectives rows (a DataFrame) of ``strategy`` [``op``] (those
    measured on ``cell``'s machine when it is given; the newest row per devices and payload), and
    the measured all-reduces of ``model``'s gradient set (devices -> s). HarnessError, naming the
    command that measures them, when fewer than 2 rows on 2 or more devices remain."""
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
            theirs = sorted(
                {
                    f"{name} ({cores} cores)"
                    for name, cores in zip(rows["device_name"], rows["host_cores"], strict=True)
                }
            )
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
    return (
        fit_alpha_beta(points, f"alpha-beta fit of {strategy}[{op}]"),
        dict(zip(own["devices"].astype(int), own["time_s"].astype(float), strict=True)),
    )


def baseline_key(a: Axes | Cell) -> tuple[object, ...]:
    """What a row shares with its 1-device baseline, the efficiency baseline's key
    (:func:`harness.results.references.find_baseline`): its values of the axes of identity key
    ``baseline`` (:func:`harness.spec.axes.key_axes`: model, data, strategy, accumulation, loop,
    steps per execution, precision, XLA, loss, co-tenants, optimizer), then the per-replica batch
    (weak scaling). A stored row's null (a row written before the axis) reads as the axis's default."""
    if isinstance(a, Cell):
        return (*(getattr(a, axis.name) for axis in key_axes(BASELINE)), a.per_replica_batch)
    return (*_key_values(a).values(), a.per_replica_batch)


def _key_values(a: Axes) -> dict[str, object]:
    """A stored row's values of the baseline key's axes, by axis name (null: the axis's default)."""
    return {
        axis.name: axis.default if (v := getattr(a, axis.row_column)) is None else v
        for axis in key_axes(BASELINE)
    }


def config_of(a: Axes) -> Cell:
    """The 1-device cell of a stored row's configuration: its :func:`baseline_key` on one device
    (what ``compare-links`` asks :func:`predictions` for)."""
    return Cell.from_dict({**_key_values(a), "batch": a.per_replica_batch})


def one_node(row: CellRow) -> bool:
    """Whether the row was measured on one machine (``nodes`` 1, or null: a local run, or a row
    written before the column)."""
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
    """What :func:`predictions` is asked (``predict``'s flags, or a configuration
    ``compare-links`` measured): ``config``, the 1-device cell whose configuration scales (its
    :func:`baseline_key` selects the rows); ``counts``, the device counts to predict along its
    strategy's device axis; ``op``, the all-reduce implementation priced (the value of the
    strategy's option axis); ``link``, a described link (None: the collectives table's fit on the
    baseline's machine, and its measurements of the model's gradients)."""

    config: Cell
    counts: tuple[int, ...]
    op: str
    link: AlphaBeta | None = None

    @property
    def axes(self) -> tuple[str, str]:
        """(the axis that adds devices under the strategy, the other one, held at 1)."""
        first, second = DEVICE_AXES
        return (first, second) if STRATEGIES[self.config.strategy].device_axis == first else (second, first)


@dataclass(frozen=True)
class Line:
    """One device count: the prediction, and the newest measured row of the configuration there
    (its figure with its CI, examples/s) with the relative error (None where nothing was measured)."""

    prediction: Prediction
    measured: Estimate | None
    error: float | None


@dataclass(frozen=True)
class Predicted:
    """:func:`predictions`' answer: the 1-device row it scaled, the all-reduce cost it priced, one
    :class:`Line` per device count."""

    baseline: CellRow
    cost: AlphaBeta
    lines: tuple[Line, ...]


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
) -> Predicted:
    """``query``'s prediction at each of its device counts from its 1-device row
    (:func:`find_one_device`) and the all-reduce cost (its described link, else
    :func:`cost_from_table` over ``collectives``, a DataFrame), beside the newest measured row of
    the same :func:`baseline_key` at each count. HarnessError without the 1-device row (naming
    ``where`` it was looked for and the command that measures it) or the all-reduce times. The
    measured row at a count is the newest measured where the prediction applies (one node for the
    collectives table's fit, several for a described link), else the newest."""
    config = query.config
    base_row = find_one_device(rows, config)
    if base_row is None:
        raise HarnessError(missing_baseline(config, where))
    base = baseline_from_row(base_row)
    measured_ar: dict[int, float] = {}
    if query.link is not None:  # devices with their own compute (other hosts, other GPUs)
        base = dataclasses.replace(base, shares_cores=False)
        cost = query.link
    else:
        cost, measured_ar = cost_from_table(collectives, config.strategy, query.op, config.model, base_row)
    axis, other = query.axes
    option = STRATEGIES[config.strategy].option_axis
    rows_here = same_config(rows, config)
    lines = []
    for n in query.counts:
        seconds, source = allreduce_time(n, config.model, cost, measured_ar, base_row)
        p = predict(base, n, seconds, source)
        at_n = [
            r
            for r in rows_here
            if getattr(r.cell, axis) == n
            and getattr(r.cell, other) == 1
            and (n == 1 or option is None or getattr(r.cell, option) in (query.op, "none"))
        ]
        local = query.link is None  # this machine's fit: one node; a described link: several
        newest = max(at_n, key=lambda r: (one_node(r) == local, r.run.timestamp), default=None)
        m = None if newest is None else newest.examples_per_sec
        lines.append(Line(p, m, None if m is None else error(p.examples_per_sec, float(m.value or math.nan))))
    return Predicted(base_row, cost, tuple(lines))


@dataclass(frozen=True)
class PredictedCell:
    """One measured multi-device cell beside the scaling model's prediction for it: the model,
    cell, series (strategy[op]), config (the baseline's batch, accumulation, loop, steps per
    execution and precision), the baseline's examples/s, devices, the measured examples/s with its
    95% CI, the predicted examples/s, the relative error and where the all-reduce time came from."""

    model: str
    cell_id: str
    series: str
    config: str
    baseline: float
    devices: int
    measured: float
    measured_ci_low: float
    measured_ci_high: float
    predicted: float
    error: float
    allreduce_from: str


def report_predictions(rows: Sequence[CellRow], collectives: Any) -> list[PredictedCell]:
    """For each measured weak-scaling multi-device mirrored / multi_worker_mirrored row with its
    1-device baseline in ``rows``: its predicted figure from that baseline and the collectives rows
    of its op measured on its machine, and the error. Rows whose op has too few all-reduce times
    are left out."""
    by_id = {r.cell.cell_id: r for r in rows if r.status == Status.OK}
    out = []
    for r in by_id.values():
        a = r.cell
        n = a.replicas * a.workers
        base = by_id.get(r.efficiency.baseline_cell_id or "")
        if a.strategy not in ALLREDUCE_STRATEGIES or n < 2 or base is None or a.scaling == "strong":
            continue
        try:
            cost = cost_from_table(collectives, a.strategy, op_of(a), a.model, base)
            seconds, source = allreduce_time(n, a.model, *cost, row=base)
        except HarnessError:
            continue
        p = predict(baseline_from_row(base), n, seconds, source)
        measured = float(r.examples_per_sec.value or math.nan)
        low, high = r.examples_per_sec.low, r.examples_per_sec.high
        out.append(
            PredictedCell(
                model=a.model,
                cell_id=a.cell_id,
                series=f"{a.strategy}[{op_of(a)}]",
                config=_config(base.cell),
                baseline=float(base.examples_per_sec.value or math.nan),
                devices=n,
                measured=measured,
                measured_ci_low=measured if low is None else low,
                measured_ci_high=measured if high is None else high,
                predicted=p.examples_per_sec,
                error=error(p.examples_per_sec, measured),
                allreduce_from=source,
            )
        )
    return out


def predictions_frame(lines: Sequence[PredictedCell]) -> pd.DataFrame:
    """:func:`report_predictions`' lines as a frame (one column per field)."""
    return pd.DataFrame(
        [dataclasses.asdict(x) for x in lines], columns=[f.name for f in dataclasses.fields(PredictedCell)]
    )


def _config(a: Axes) -> str:
    """What besides the topology a 1-device cell fixes, e.g. ``b64/acc1/ctl/spe10/float32``."""
    return f"b{a.per_replica_batch}/acc{a.accum_steps}/{a.loop}/spe{a.steps_per_execution}/{a.precision}"
