"""A scaling model: throughput and efficiency at n devices from a measured 1-device cell and the cost
of its all-reduce. Pure (rows in, predictions out).

**All-reduce cost** (the alpha-beta model of a ring all-reduce of m bytes among n participants):

    T(n, m) = 2(n - 1) x alpha + 2(n - 1) / n x m x beta        [s]

alpha: latency per ring step (s); beta: seconds per byte over one link (1 / bandwidth). Fitted by
non-negative least squares to every ok row of the collectives table for the strategy and op (sizes
and participant counts; :func:`fit_alpha_beta`), or given for a link you do not have
(``--link-gbps G --latency-us L``: beta = 8 / (G x 1e9), alpha = L x 1e-6; :func:`link_alpha_beta`).
Where the table holds the model's own gradient set at n, that measurement is used instead of the
fit (several tensors cost more than one of the same bytes). Only rows measured on the 1-device
cell's machine are used (:func:`same_machine`), the newest per device count and payload; fewer
than 2 on 2 or more devices is a HarnessError naming ``python -m harness run --sweep collectives``.

**Step at n devices** (weak scaling: each device trains the 1-device cell's update):

    s(n)      = max(1, n x c1 / C)   devices that share one host's C cores, c1 of them used by
                                     the 1-device cell (logical CPU devices, local workers);
                1                    devices with their own compute (GPUs, separate hosts)
    step(n)   = step(1) x s(n) + T(n, gradient bytes)
    throughput(n) = n x effective_batch(1) / step(n);   efficiency(n) = step(1) / step(n)

Assumptions, each a way it can be wrong: the 1-device step is all local work (compute, input,
dispatch, the optimizer) and grows only by core sharing; the all-reduce does not overlap the
backward pass (on GPUs, NCCL overlaps part of it: the model is then pessimistic); one all-reduce
per update (the ctl loop's loss reduce, a scalar, is left out); the input pipeline of n devices is
as fast per device as of one (one host feeding many GPUs can fall behind); on multi-node links the
fitted alpha of this machine's localhost gRPC is no guide (give --latency-us).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize

from harness.contract.records import Axes, CellRow, Status
from harness.errors import HarnessError
from harness.spec.axes import OPTION_AXES
from harness.spec.collectives import FLOAT32_BYTES, GRADIENT_SHAPES
from harness.spec.strategies import ALLREDUCE_STRATEGIES, STRATEGIES


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


def _op(a: Axes) -> str:
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
            cost = cost_from_table(collectives, a.strategy, _op(a), a.model, base)
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
                series=f"{a.strategy}[{_op(a)}]",
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
