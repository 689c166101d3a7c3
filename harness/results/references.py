"""A cell's row set against what else the run measured, once its rows are in (pure, no
TensorFlow): its 1-device baseline and the same cell alone (scaling efficiency, co-tenancy ratio),
the run's peak (mfu) and earlier runs' figures (its CI widened to their spread)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.contract.columns import Estimate, finite
from harness.contract.records import Axes, CellRow, Status, Utilization
from harness.formulas import metrics, stats
from harness.results.aggregate import process_figures
from harness.spec.axes import ALONE, BASELINE, COMPUTE_DTYPE, key_axes
from harness.spec.cell import Cell
from harness.spec.models import flops_per_example


def _key(a: Axes, key: str) -> tuple[object, ...]:
    """The row's values of the axes in identity ``key`` (:func:`harness.spec.axes.key_axes`)."""
    return tuple(getattr(a, axis.row_column) for axis in key_axes(key))


def find_baseline(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    """The ok 1-device row of the same configuration: same per-replica batch (weak scaling) or same
    global batch (strong scaling)."""

    def key(a: Axes) -> tuple[object, ...]:
        batch = a.global_batch if row.cell.scaling == "strong" else a.per_replica_batch
        return (*_key(a, BASELINE), batch)

    for other in rows:
        if (
            other.status == Status.OK
            and other.cell.replicas * other.cell.workers == 1
            and key(other.cell) == key(row.cell)
        ):
            return other
    return None


def find_alone(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    """The ok row of the same cell with one tenant (co-tenancy's reference)."""
    key = _key(row.cell, ALONE)
    for other in rows:
        if other.status == Status.OK and other.cell.tenants == 1 and _key(other.cell, ALONE) == key:
            return other
    return None


def _estimate(r: stats.Ratio) -> Estimate:
    return Estimate.of(r.value, r.low, r.high)


def with_ratios(row: CellRow, rows: Sequence[CellRow]) -> CellRow:
    """The row plus scaling_efficiency (and baseline_cell_id) against the run's rows, and for
    co-tenant cells cotenancy_ratio against the same cell alone, each with its CI (Welch's t over
    the two rows' process figures, :func:`harness.formulas.stats.ratio`)."""
    if row.status != Status.OK:
        return row
    if row.cell.tenants > 1:
        alone = find_alone(row, rows)
        if alone is not None:
            cotenancy = _estimate(stats.ratio(process_figures(row), process_figures(alone)))
            row = replace(row, tenancy=replace(row.tenancy, cotenancy_ratio=cotenancy))
    devices = row.cell.replicas * row.cell.workers
    base = row if devices == 1 else find_baseline(row, rows)
    if base is None:
        return replace(row, efficiency=replace(row.efficiency, baseline_cell_id=""))
    if base is row:
        n = len(process_figures(row))
        eff = stats.Ratio(1.0, 1.0, 1.0, n, n)
    else:
        eff = stats.ratio(process_figures(row), process_figures(base)).scaled(1 / devices)
    return replace(
        row,
        efficiency=replace(
            row.efficiency, scaling_efficiency=_estimate(eff), baseline_cell_id=base.cell.cell_id
        ),
    )


def with_history(row: CellRow, earlier: Sequence[float]) -> CellRow:
    """The row with its figure's CI widened to cover run-to-run drift when ``earlier`` (figures of
    earlier runs of the same cell on the same fingerprint, oldest first) is long enough
    (:func:`harness.formulas.stats.figure_with_history`); ``ci_history_runs`` says how many runs
    were used (0: the CI covers this run's processes only)."""
    if row.status != Status.OK:
        return row
    est, used = stats.figure_with_history(process_figures(row), earlier)
    spread = replace(row.spread, ci_history_runs=used)
    if used == 0:
        return replace(row, spread=spread)
    widened = replace(row.examples_per_sec, low=finite(est.low), high=finite(est.high))
    return replace(row, spread=spread, examples_per_sec=widened)


@dataclass(frozen=True)
class Peak:
    """The run's peak of one compute dtype on one device (all of a host's cores on CPU), FLOP/s,
    with its CI over peak processes."""

    dtype: str
    estimate: stats.Interval


def peak_cores(row: CellRow, processes: int) -> int:
    """CPU cores the cell's processes had in all, at most the host's."""
    host = (row.machine.host_cores if row.machine else None) or 1
    return min(host, (row.ran.cores_per_worker or host) * max(processes, 1))


def with_peak(row: CellRow, peaks: Mapping[str, Peak], cell: Cell) -> CellRow:
    """The row plus the run's peak of the cell's compute dtype, scaled to what the cell ran on
    (x device_count on GPUs; x peak_cores / host_cores on CPU), and mfu against it."""
    peak = peaks.get(COMPUTE_DTYPE[cell.precision])
    if (
        peak is None
        or row.status not in (Status.OK, None)
        or row.machine is None
        or not row.machine.device_kind
    ):
        return row
    if row.machine.device_kind == "GPU":
        cores, scale = None, float(row.ran.device_count or cell.devices)
    else:
        cores = peak_cores(row, 1 if cell.tenants > 1 else cell.processes)
        scale = cores / (row.machine.host_cores or cores)
    est = peak.estimate
    value = est.value * scale
    eps = row.examples_per_sec.value
    flops = row.flops.flops_per_example or flops_per_example(cell.model)
    mfu = metrics.mfu(eps, flops, value) if row.status == Status.OK and eps and flops else row.peak.mfu
    return replace(
        row,
        peak=Utilization(
            peak_dtype=peak.dtype,
            peak_cores=cores,
            peak_flops_per_sec=Estimate(value, finite(est.low * scale), finite(est.high * scale)),
            mfu=mfu,
        ),
    )
