"""Every result row is assembled here, as the typed records of :mod:`harness.contract.records`
(:class:`CellRow`, :class:`WindowRow`). Pure, no TensorFlow; both sides use it.

- :func:`cell_columns` and :func:`fact_columns`: what the cell is and where it ran;
- :func:`started_row`: those plus the worker's cores, when the worker starts the cell;
- :class:`Measurement` -> :func:`measured_columns` and :func:`window_rows`: one process's figures
  from the worker's raw numbers (window seconds, counts, checks);
- :func:`combine`: one pass of a co-tenant cell from its tenants' rows (over their common span);
- :func:`aggregate`: the cell's row from its processes (one per pass): the figure, its CI, CVs,
  and the facts they must agree on (:func:`agreed_columns`: ``jit_compile``);
- :func:`not_measured_row`: an unsupported or failed cell;
- :func:`with_ratios`: scaling efficiency and co-tenancy ratio, with CIs, against the run's rows;
- :func:`with_peak`: the run's peak for the cell's dtype and cores, and mfu;
- :func:`with_history`: the figure's CI widened to the spread of earlier runs' figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from harness.contract.events import Facts
from harness.contract.records import CellRow, Status, WindowRow
from harness.formulas import breakdown, metrics, stats
from harness.formulas.turns import Turn
from harness.formulas.turns import clean as turns_clean
from harness.spec.axes import COMPUTE_DTYPE
from harness.spec.cell import Cell
from harness.spec.frameworks import together_key
from harness.spec.models import flops_per_example
from harness.spec.protocol import Protocol

LEARNING_RATE = 0.01

OPTIMIZER = f"SGD(learning_rate={LEARNING_RATE})"


def cell_columns(cell: Cell, protocol: Protocol) -> CellRow:
    """The columns that describe the cell and how it is timed (known before it runs)."""
    analytic = flops_per_example(cell.model)
    return {
        "cell_id": cell.id,
        "model": cell.model,
        "loss": cell.loss,
        "data": cell.data,
        "strategy": cell.strategy,
        "cross_device_ops": cell.cross_device_ops,
        "communication": cell.communication,
        "replicas": cell.replicas,
        "workers": cell.workers,
        "ps": cell.ps,
        "tenants": cell.tenants,
        "tenant_framework": cell.tenant_framework,
        "per_replica_batch": cell.per_replica_batch,
        "global_batch": cell.global_batch,
        "effective_batch": cell.effective_batch,
        "accum_steps": cell.accum_steps,
        "loop": cell.loop,
        "steps_per_execution": cell.steps_per_execution,
        "precision": cell.precision,
        "scaling": cell.scaling,
        "optimizer": OPTIMIZER,
        "learning_rate": LEARNING_RATE,
        "flops_per_example": analytic,
        "flops_source": "analytic" if analytic is not None else None,
        "flops_analytic": analytic,
        "window_target_s": protocol.window_s,
        "repeats": protocol.repeats,
        "warmup_windows": protocol.warmup_windows,
        "min_processes": protocol.processes,
        "max_processes": protocol.max_processes,
    }


def fact_columns(facts: Facts | None) -> CellRow:
    """The columns that come from a worker's fingerprint facts (empty when none are known)."""
    if not facts:
        return {}
    return {
        "device_kind": facts["device_type"],
        "device_name": facts["device_name"],
        "host_cpu": facts["host_cpu"],
        "host_cores": facts["host_cores"],
        "intra_op_threads": facts["intra_op_threads"],
        "inter_op_threads": facts["inter_op_threads"],
        "tf_version": facts["tf_version"],
        "keras_version": facts["keras_version"],
        "python_version": facts["python_version"],
        "build_info": json.dumps(
            {
                k: facts.get(k)
                for k in ("cuda_version", "cudnn_version", "rocm_version", "nvidia_driver", "tensor_float_32")
            }
        ),
        "env": json.dumps(facts["env"], sort_keys=True),
        "fingerprint": facts["fingerprint"],
    }


def started_row(
    cell: Cell, protocol: Protocol, facts: Facts, cores: int | None, oversubscribed: bool | None
) -> CellRow:
    """The row a worker starts from: the cell, its facts, and the cores each worker has (None: the
    whole host); ``oversubscribed`` None means every worker asks for ``cores`` of the host's."""
    cores = cores or facts["host_cores"]
    if oversubscribed is None:
        oversubscribed = cores * cell.workers > facts["host_cores"]
    return {
        **cell_columns(cell, protocol),
        **fact_columns(facts),
        "cores_per_worker": cores,
        "oversubscribed": oversubscribed,
    }


@dataclass(frozen=True)
class Measurement:
    """What a worker measured in one timed cell, as raw numbers (times in seconds).

    ``window_seconds``: each timed window's wall time; ``worker_seconds``: each worker's own time
    of each window (multi-worker cells; else the windows themselves); ``worker_updates``: the
    updates each worker ran in each window (parameter server; else empty); ``problems``: what the
    integrity checks found; ``window_starts``: each window's start on the host's monotonic clock;
    ``joules``: energy over ``joules_s`` seconds around the timed windows (None: no counter).
    """

    window_seconds: tuple[float, ...]
    window_steps: int
    startup_s: float
    compile_s: float
    final_loss: float
    problems: tuple[str, ...]
    effective_cross_device_ops: str
    allreduces_per_update: float | None
    weights_digest: str
    device_kind: str
    hosts: int
    worker_seconds: tuple[tuple[float, ...], ...]
    worker_updates: tuple[tuple[int, ...], ...]
    updates_run: int
    optimizer_iterations: int
    joules: float | None
    window_starts: tuple[float, ...] = ()
    joules_s: float | None = None
    window_target_s: float | None = None
    """The window length asked for (s) where it is not the protocol's (a turn)."""
    parts: Mapping[str, float | None] = field(default_factory=dict)
    parts_error: str = ""
    flops: Mapping[str, Any] = field(default_factory=dict)
    """The model's FLOPs counted from its traced step (:func:`harness.worker.flops.count_step`:
    flops_per_example, trainable_parameters, gradient_bytes, flops_note); empty when not counted."""
    jit_compile: bool | None = None
    """Whether the training function ran XLA-compiled, as the trainer reports it
    (:attr:`harness.worker.build.loops.Trainer.jit_compile`); None: not reported."""


def flops_columns(flops: Mapping[str, Any]) -> CellRow:
    """The counted FLOPs' columns (a count of 0, or none, keeps the analytic one and says why)."""
    sizes: CellRow = {
        "trainable_parameters": flops.get("trainable_parameters"),
        "gradient_bytes": flops.get("gradient_bytes"),
    }
    if not flops.get("flops_per_example"):
        note = flops.get("flops_note") or "no matmul or convolution found in the traced step"
        return {**sizes, "flops_note": f"analytic FLOPs: {note}"}
    return {
        **sizes,
        "flops_per_example": round(flops["flops_per_example"]),
        "flops_source": "counted",
        "flops_note": flops.get("flops_note") or "",
    }


def _window_throughputs(cell: Cell, m: Measurement) -> tuple[int, list[float]]:
    """(examples per window, each timed window's examples/s)."""
    examples = m.window_steps * cell.effective_batch
    return examples, metrics.window_throughputs(m.window_seconds, examples)


def _straggler_ratio(cell: Cell, m: Measurement) -> float | None:
    """Parameter server: update imbalance; one process: 1.0. Synchronous multi-worker cells: None,
    since every worker's window ends at the same all-reduce, so a slow worker cannot show."""
    if m.worker_updates:
        return metrics.update_imbalance(m.worker_updates)
    if len(m.worker_seconds) > 1 and cell.kind.synchronous:
        return None
    return metrics.straggler_ratio(m.worker_seconds)


def measured_columns(cell: Cell, m: Measurement) -> CellRow:
    """One process's figures (an invalid process reports no figure of any kind)."""
    _examples, rates = _window_throughputs(cell, m)
    median = metrics.median(rates)
    reductions = m.allreduces_per_update
    row: CellRow = {
        "status": Status.INVALID if m.problems else Status.OK,
        "reason": "; ".join(m.problems),
        "effective_cross_device_ops": m.effective_cross_device_ops,
        "examples_per_sec": median,
        "cv_within_process": stats.cv(rates),
        "window_steps": m.window_steps,
        "repeats": len(m.window_seconds),
        "startup_s": m.startup_s,
        "compile_s": m.compile_s,
        "final_loss": m.final_loss,
        "optimizer_updates_per_sec": median / cell.effective_batch,
        "allreduces_per_update": reductions,
        "allreduces_per_example": None if reductions is None else reductions / cell.effective_batch,
        "weights_digest": m.weights_digest,
        "jit_compile": m.jit_compile,
        "device_count": m.hosts if m.device_kind == "CPU" else cell.devices,
        "logical_devices": m.device_kind == "CPU" and cell.devices > m.hosts,  # local workers share a CPU
        "hosts": m.hosts,
        "straggler_ratio": _straggler_ratio(cell, m),
        "updates_run": m.updates_run,
        "optimizer_iterations": m.optimizer_iterations,
        "energy_j_per_example": None
        if m.joules is None
        else m.joules / (m.updates_run * cell.effective_batch),
        "gpu_watts": None if m.joules is None or not m.joules_s else m.joules / m.joules_s,
        "compute_s": m.parts.get("compute_s"),
        "allreduce_s": m.parts.get("allreduce_s"),
        "input_s": m.parts.get("input_s"),
        "dispatch_s": m.parts.get("dispatch_s"),
        "parts_step_s": m.parts.get("parts_step_s"),
    }
    if m.window_target_s is not None:
        row["window_target_s"] = m.window_target_s
    if m.parts_error:
        row["bound_reason"] = m.parts_error
    row.update(flops_columns(m.flops))
    row.update(alone_columns(row))
    return without_figures(row) if m.problems else row


def window_rows(cell: Cell, m: Measurement) -> list[WindowRow]:
    """One row per worker and timed window: the window's time, start and throughput, the worker's
    own time (or, under the parameter server, the updates that worker ran in it)."""
    examples, rates = _window_throughputs(cell, m)
    starts: list[float | None] = list(m.window_starts) or [None] * len(rates)
    workers = len(m.worker_updates) or len(m.worker_seconds)
    return [
        WindowRow(
            cell_id=cell.id,
            window_steps=m.window_steps,
            examples=examples,
            worker=w,
            repeat=i,
            window_s=s,
            start_s=t,
            examples_per_sec=r,
            # the coordinator's windows, split by the updates each worker ran
            worker_s=None if m.worker_updates else m.worker_seconds[w][i],
            **({"worker_updates": m.worker_updates[w][i]} if m.worker_updates else {}),
        )
        for w in range(workers)
        for i, (s, t, r) in enumerate(zip(m.window_seconds, starts, rates, strict=True))
    ]


def not_measured_row(
    cell: Cell, protocol: Protocol, status: Status, reason: str, facts: Facts | None
) -> CellRow:
    """A row for a cell that produced no figures (unsupported, failed)."""
    return {**cell_columns(cell, protocol), **fact_columns(facts), "status": status, "reason": reason}


EFFICIENCY_KEY = (
    "model",
    "data",
    "strategy",
    "loop",
    "steps_per_execution",
    "precision",
    "accum_steps",
    "tenants",
)
"""What a row shares with its 1-device baseline (whose cross-device op and communication are
"none": one device makes no reduce)."""

ALONE_KEY = tuple(k for k in EFFICIENCY_KEY if k != "tenants") + (
    "cross_device_ops",
    "communication",
    "replicas",
    "workers",
    "ps",
    "per_replica_batch",
    "scaling",
)


def find_alone(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    """The ok row of the same cell with one tenant (co-tenancy's reference)."""
    for other in rows:
        if (
            other.get("status") == Status.OK
            and other.get("tenants", 1) == 1
            and all(other.get(k) == row.get(k) for k in ALONE_KEY)
        ):
            return other
    return None


def merged(*parts: Mapping[str, object]) -> CellRow:
    """Rows and columns merged left to right into one row. For keys computed at run time (a
    ratio's name, the figure columns): the type checker cannot see them, so the store checks every
    key against the schema when the row is written."""
    out: dict[str, object] = {}
    for part in parts:
        out.update(part)
    return cast(CellRow, out)


def _float(row: Mapping[str, object], key: str) -> float:
    """A figure the row must hold (an ok row's examples_per_sec, a window's times)."""
    value = row.get(key)
    if not isinstance(value, (int, float)):
        raise TypeError(f"{key} is {value!r}, expected a number")
    return float(value)


def find_baseline(row: CellRow, rows: Sequence[CellRow]) -> CellRow | None:
    """The ok 1-device row of the same configuration: same per-replica batch (weak scaling) or same
    global batch (strong scaling)."""
    batch_key = "global_batch" if row["scaling"] == "strong" else "per_replica_batch"
    for other in rows:
        if (
            other.get("status") == Status.OK
            and other["replicas"] * other["workers"] == 1
            and all(other.get(k) == row.get(k) for k in (*EFFICIENCY_KEY, batch_key))
        ):
            return other
    return None


SHARED_FIGURES = (
    "alone_examples_per_sec",
    "tenant_alone_examples_per_sec",
    "tenant_together_examples_per_sec",
    "interference_ratio",
)
"""A cell with a co-tenant from another framework: the per-process figures (from its instance's
turns) that its row gives as the median over processes with a CI, as examples_per_sec."""


FIGURE_COLUMNS = (
    "examples_per_sec",
    "examples_per_sec_ci_low",
    "examples_per_sec_ci_high",
    "process_examples_per_sec",
    "cv_between_processes",
    "cv_within_process",
    "mfu",
    "optimizer_updates_per_sec",
    "tenant_examples_per_sec_min",
    "tenant_examples_per_sec_max",
    "tenant_share_min",
    "straggler_ratio",
    "energy_j_per_example",
    "gpu_watts",
    "scaling_efficiency",
    "scaling_efficiency_ci_low",
    "scaling_efficiency_ci_high",
    "cotenancy_ratio",
    "cotenancy_ratio_ci_low",
    "cotenancy_ratio_ci_high",
    "peak_flops_per_sec",
    "peak_flops_per_sec_ci_low",
    "peak_flops_per_sec_ci_high",
    *(
        f"{name}{end}"
        for name in (*SHARED_FIGURES, "shared_ratio", "tenant_shared_ratio")
        for end in ("", "_ci_low", "_ci_high")
    ),
)
"""Every measured figure: an invalid or failed row carries none of them."""


def without_figures(row: CellRow) -> CellRow:
    """The row with every figure nulled (invalid and failed rows)."""
    return merged(row, dict.fromkeys(FIGURE_COLUMNS))


def alone_columns(row: CellRow) -> CellRow:
    """The tenant columns of a cell that ran alone (one tenant)."""
    eps = row.get("examples_per_sec")
    return {
        "tenant_examples_per_sec_min": eps,
        "tenant_examples_per_sec_max": eps,
        "tenant_share_min": 1.0 if eps else None,
    }


def common_span(windows: Sequence[Sequence[WindowRow]]) -> tuple[float, float]:
    """(start, end) on the host's monotonic clock in which every tenant was timing: from the
    latest first-window start to the earliest last-window end."""
    start = max(min(_float(w, "start_s") for w in ws) for ws in windows)
    end = min(max(_float(w, "start_s") + w["window_s"] for w in ws) for ws in windows)
    return start, end


def _rate_in_span(windows: Sequence[WindowRow], start: float, end: float) -> float | None:
    """Examples/s of one tenant over [start, end]: each window counts with the part of it inside
    the span (its examples spread evenly over its time); None when no window overlaps it."""
    examples = seconds = 0.0
    for w in windows:
        begun = _float(w, "start_s")
        overlap = min(end, begun + w["window_s"]) - max(start, begun)
        if overlap > 0:
            examples += w["examples"] * overlap / w["window_s"]
            seconds += overlap
    return examples / seconds if seconds > 0 else None


def agreed(rows: Sequence[Mapping[str, object]], key: str) -> object:
    """The value of ``key`` that every row holding one agrees on; None where they differ or no row
    holds one (a process that reported nothing, e.g. a failed one or one from an older suite, is
    left out)."""
    values = {r.get(key) for r in rows} - {None}
    return values.pop() if len(values) == 1 else None


def agreed_columns(rows: Sequence[Mapping[str, object]]) -> CellRow:
    """The per-process facts a cell's row gives only where its processes (passes, tenants) agree:
    ``jit_compile``."""
    jit = agreed(rows, "jit_compile")
    return {"jit_compile": jit if isinstance(jit, bool) else None}


def combine(
    rows: list[CellRow], windows: list[list[WindowRow]], effective_batch: int
) -> tuple[CellRow, list[WindowRow]]:
    """One pass of a co-tenant cell: its row and window rows from each tenant's.

    The aggregate counts only what ran at the same time: each tenant's examples over the span where
    every tenant was timing (:func:`common_span`; a window partly inside counts in proportion), so a
    tenant that finished early does not lend the others its devices. GPU energy per example: the tenants' mean power (they
    meter the same devices) over the aggregate throughput."""
    tagged = [WindowRow(**{**w, "worker": i}) for i, ws in enumerate(windows) for w in ws]
    agree = agreed_columns(rows)
    bad = next(((i, r) for i, r in enumerate(rows) if r.get("status") != Status.OK), None)
    if bad is not None:
        i, r = bad
        reason = f"tenant {i} of {len(rows)}: {r.get('reason', '')}"
        return without_figures({**r, **agree, "reason": reason}), tagged
    start, end = common_span(windows)
    rates = [_rate_in_span(ws, start, end) for ws in windows]
    if any(r is None for r in rates):
        return without_figures(
            {
                **rows[0],
                **agree,
                "status": Status.INVALID,
                "reason": ("co-tenants did not time together: no span in which every tenant was timing"),
            }
        ), tagged
    own = [r for r in rates if r is not None]
    aggregate = sum(own)
    watts = [w for w in (r.get("gpu_watts") for r in rows) if w is not None]
    power = sum(watts) / len(watts) if len(watts) == len(rows) else None
    out: CellRow = {
        **rows[0],
        **agree,
        "examples_per_sec": aggregate,
        "cv_within_process": max(_float(r, "cv_within_process") for r in rows),
        "optimizer_updates_per_sec": aggregate / effective_batch,
        "tenant_examples_per_sec_min": min(own),
        "tenant_examples_per_sec_max": max(own),
        "tenant_share_min": min(own) / aggregate,
        "straggler_ratio": max(own) / min(own),
        "gpu_watts": power,
        "energy_j_per_example": None if power is None else power / aggregate,
    }
    return out, tagged


def _turn_rate(turns: Sequence[Turn], key: str) -> float | None:
    """Median examples/s of the turns of ``key`` (None when it has none)."""
    rates = [t.examples / t.seconds for t in turns if t.member == key and t.seconds > 0 and t.examples > 0]
    return metrics.median(rates) if rates else None


def flops_note(tenant: int | None, ours: object) -> str:
    """Whether a co-tenant's FLOP count equals the TensorFlow side's."""
    if tenant is None or not isinstance(ours, int):
        return "not compared: a count is missing"
    if tenant == ours:
        return f"equal to the TensorFlow side's count ({ours:,} FLOPs per example)"
    return f"differs from the TensorFlow side's {ours:,} FLOPs per example by {tenant / ours - 1:+.2%}"


def shared_columns(
    row: CellRow, turns: Sequence[Turn], key: str, tenant: str, facts: Mapping[str, Any]
) -> CellRow:
    """One process (instance) of a cell with a co-tenant from another framework: its figures from
    the instance's turns (undisturbed blocks where any are left): the TensorFlow side alone and
    together (``examples_per_sec``), the co-tenant alone and together, their kept shares summed,
    and what the co-tenant reported. ``key``: the member's turn key; ``tenant``: the co-tenant's."""
    kept = turns_clean(turns) or list(turns)
    ours, ours_shared = _turn_rate(kept, key), _turn_rate(kept, together_key(key))
    theirs, theirs_shared = _turn_rate(kept, tenant), _turn_rate(kept, together_key(tenant))
    rates = (ours, ours_shared, theirs, theirs_shared)
    out: CellRow = {
        "tenant_framework_version": f"{facts.get('framework', '')} {facts.get('version', '')}".strip()
        or None,
        "tenant_device": facts.get("device"),
        "tenant_flops_per_example": facts.get("flops_per_example"),
        "tenant_flops_note": facts.get("flops_note")
        or flops_note(facts.get("flops_per_example"), row.get("flops_per_example")),
    }
    if any(r is None for r in rates) or row.get("status") != Status.OK:
        return out
    assert ours and ours_shared and theirs and theirs_shared
    out.update(
        {
            "examples_per_sec": ours_shared,
            "optimizer_updates_per_sec": ours_shared / _float(row, "effective_batch"),
            "alone_examples_per_sec": ours,
            "tenant_alone_examples_per_sec": theirs,
            "tenant_together_examples_per_sec": theirs_shared,
            "interference_ratio": ours_shared / ours + theirs_shared / theirs,
        }
    )
    return out


def shared_windows(
    windows: Sequence[WindowRow], turns: Sequence[Turn], key: str, tenant: str, framework: str, batch: int
) -> list[WindowRow]:
    """One process (instance) of a cell with a co-tenant from another framework: the TensorFlow
    worker's windows tagged alone or shared (its window turns, in the order it timed them; left
    untagged where the counts differ), then the co-tenant's turns as windows of worker 1."""
    ours = [t.member == together_key(key) for t in turns if t.member in (key, together_key(key))]
    tagged = (
        [
            WindowRow(**{**w, "framework": "tensorflow", "shared": shared})
            for w, shared in zip(windows, ours, strict=True)
        ]
        if len(ours) == len(windows)
        else list(windows)
    )
    cell = windows[0].get("cell_id") if windows else None
    theirs = [t for t in turns if t.member in (tenant, together_key(tenant))]
    tagged += [
        WindowRow(
            cell_id=str(cell),
            worker=1,
            repeat=i,
            window_steps=int(t.examples) // batch,
            examples=int(t.examples),
            window_s=t.seconds,
            start_s=None,
            examples_per_sec=t.examples / t.seconds if t.seconds > 0 else None,
            framework=framework,
            shared=t.member == together_key(tenant),
        )
        for i, t in enumerate(theirs)
    ]
    return tagged


def shared_figures(results: Sequence[ProcessResult]) -> CellRow:
    """:data:`SHARED_FIGURES` over a cell's processes: median with a 95% CI (as examples_per_sec);
    nothing for a cell without a co-tenant from another framework."""
    out: dict[str, object] = {}
    for column in SHARED_FIGURES:
        values = [_float(r.row, column) for r in results if r.row.get(column) is not None]
        if len(values) != len(results) or not values:
            continue
        est = stats.figure(values)
        out.update(
            {column: est.value, f"{column}_ci_low": _finite(est.low), f"{column}_ci_high": _finite(est.high)}
        )
    return cast(CellRow, out)  # a dict of its columns, checked by the schema's tests


@dataclass(frozen=True)
class ProcessResult:
    """One pass of a cell: the row its processes reported (one process's figures), its window
    rows, the pass, and the parent's clock: ``wall_s`` from launch to the last exit, ``launch_s``
    from launch to the cell's start (import TensorFlow, devices, cluster)."""

    row: CellRow
    windows: list[WindowRow]
    pass_index: int
    wall_s: float = 0.0
    launch_s: float = 0.0


def _median_of(results: Sequence[ProcessResult], key: str) -> float | None:
    values = [cast(Mapping[str, object], r.row).get(key) for r in results]
    kept = [float(v) for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    return metrics.median(kept) if kept else None


MEDIAN_COLUMNS = (
    "startup_s",
    "compile_s",
    "straggler_ratio",
    "energy_j_per_example",
    "gpu_watts",
    "tenant_examples_per_sec_min",
    "tenant_examples_per_sec_max",
    "tenant_share_min",
    "cv_within_process",
    *breakdown.MEASURED,
)
"""Per-process columns that the cell's row gives as their median over its processes."""


def aggregate(cell: Cell, protocol: Protocol, results: Sequence[ProcessResult]) -> CellRow:
    """The cell's row from its processes (one per pass, in pass order).

    Any invalid or failed process decides the row (with no figures): an integrity failure is the
    configuration's, and a crash is reported rather than averaged away. Otherwise the figure is
    the median of the process figures, its CI the log-scale Student-t interval over them
    (:func:`harness.formulas.stats.figure`). Either way ``jit_compile`` is what the processes that
    reported it agree on, null where they differ (:func:`agreed_columns`)."""
    timing: CellRow = {
        "processes": len(results),
        "wall_s": sum(r.wall_s for r in results),
        "min_processes": protocol.processes,
        "max_processes": protocol.max_processes,
    }
    agree = agreed_columns([r.row for r in results])
    bad = next((r for r in results if r.row.get("status") != Status.OK), None)
    if bad is not None:
        reason = bad.row.get("reason", "")
        if len(results) > 1:
            reason = f"pass {bad.pass_index + 1} of {len(results)}: {reason}"
        return without_figures({**bad.row, **timing, **agree, "reason": reason})
    figures = [_float(r.row, "examples_per_sec") for r in results]
    est = stats.figure(figures)
    between = stats.cv(figures)
    row = merged(
        results[-1].row,
        timing,
        agree,
        {k: _median_of(results, k) for k in MEDIAN_COLUMNS},
        {
            "examples_per_sec": est.value,
            "examples_per_sec_ci_low": _finite(est.low),
            "examples_per_sec_ci_high": _finite(est.high),
            "process_examples_per_sec": figures,
            "cv_between_processes": _finite(between),
            "unstable": bool(math.isfinite(between) and between > protocol.unstable_cv),
            "optimizer_updates_per_sec": est.value / cell.effective_batch,
        },
    )
    return merged(row, breakdown.columns(cell, row), shared_figures(results))


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def needs_another_pass(results: Sequence[ProcessResult], protocol: Protocol) -> bool:
    """Adaptive repeats: every process ok, fewer than max_processes, and the process figures
    disagree by a coefficient of variation above unstable_cv."""
    if len(results) >= protocol.max_processes or any(r.row.get("status") != Status.OK for r in results):
        return False
    between = stats.cv([_float(r.row, "examples_per_sec") for r in results])
    return math.isfinite(between) and between > protocol.unstable_cv


def _set_ratio(row: CellRow, name: str, r: stats.Ratio) -> CellRow:
    return merged(row, {name: r.value, f"{name}_ci_low": _finite(r.low), f"{name}_ci_high": _finite(r.high)})


def _figures(row: CellRow) -> list[float]:
    values = row.get("process_examples_per_sec")
    if values is None or len(values) == 0:
        return [_float(row, "examples_per_sec")]
    return [float(v) for v in values]


def with_ratios(row: CellRow, rows: Sequence[CellRow]) -> CellRow:
    """The row plus scaling_efficiency (and baseline_cell_id) against the run's rows, and for
    co-tenant cells cotenancy_ratio against the same cell alone, each with its CI (Welch's t over
    the two rows' process figures, :func:`harness.formulas.stats.ratio`)."""
    if row.get("status") != Status.OK:
        return row
    if row.get("tenants", 1) > 1:
        alone = find_alone(row, rows)
        if alone is not None:
            row = _set_ratio(row, "cotenancy_ratio", stats.ratio(_figures(row), _figures(alone)))
    devices = row["replicas"] * row["workers"]
    base = row if devices == 1 else find_baseline(row, rows)
    if base is None:
        return {**row, "baseline_cell_id": ""}
    if base is row:
        eff = stats.Ratio(1.0, 1.0, 1.0, len(_figures(row)), len(_figures(row)))
    else:
        eff = stats.ratio(_figures(row), _figures(base)).scaled(1 / devices)
    return {**_set_ratio(row, "scaling_efficiency", eff), "baseline_cell_id": base["cell_id"]}


def with_history(row: CellRow, earlier: Sequence[float]) -> CellRow:
    """The row with its figure's CI widened to cover run-to-run drift when ``earlier`` (figures of
    earlier runs of the same cell on the same fingerprint, oldest first) is long enough
    (:func:`harness.formulas.stats.figure_with_history`); ``ci_history_runs`` says how many runs
    were used (0: the CI covers this run's processes only)."""
    if row.get("status") != Status.OK:
        return row
    est, used = stats.figure_with_history(_figures(row), earlier)
    if used == 0:
        return {**row, "ci_history_runs": 0}
    return {
        **row,
        "examples_per_sec_ci_low": _finite(est.low),
        "examples_per_sec_ci_high": _finite(est.high),
        "ci_history_runs": used,
    }


@dataclass(frozen=True)
class Peak:
    """The run's peak of one compute dtype on one device (all of a host's cores on CPU), FLOP/s,
    with its CI over peak processes."""

    dtype: str
    estimate: stats.Estimate


def peak_cores(row: CellRow, processes: int) -> int:
    """CPU cores the cell's processes had in all, at most the host's."""
    host = int(row.get("host_cores") or 1)
    return min(host, int(row.get("cores_per_worker") or host) * max(processes, 1))


def with_peak(row: CellRow, peaks: Mapping[str, Peak], cell: Cell) -> CellRow:
    """The row plus the run's peak of the cell's compute dtype, scaled to what the cell ran on
    (x device_count on GPUs; x peak_cores / host_cores on CPU), and mfu against it."""
    peak = peaks.get(COMPUTE_DTYPE[cell.precision])
    if peak is None or row.get("status") not in (Status.OK, None) or not row.get("device_kind"):
        return row
    if row["device_kind"] == "GPU":
        cores, scale = None, float(row.get("device_count") or cell.devices)
    else:
        cores = peak_cores(row, 1 if cell.tenants > 1 else cell.processes)
        scale = cores / int(row.get("host_cores") or cores)
    est = peak.estimate
    value = est.value * scale
    out: CellRow = {
        **row,
        "peak_dtype": peak.dtype,
        "peak_cores": cores,
        "peak_flops_per_sec": value,
        "peak_flops_per_sec_ci_low": _finite(est.low * scale),
        "peak_flops_per_sec_ci_high": _finite(est.high * scale),
    }
    eps = row.get("examples_per_sec")
    if row.get("status") == Status.OK and eps:
        flops = row.get("flops_per_example") or flops_per_example(cell.model)
        if flops:
            out["mfu"] = metrics.mfu(eps, flops, value)
    return out
