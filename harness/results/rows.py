"""Every result row is assembled here: plain dicts keyed by the columns of
:mod:`harness.results.store`. Pure, no TensorFlow; both sides use it.

- :func:`cell_columns` and :func:`fact_columns`: what the cell is and where it ran;
- :func:`started_row`: those plus the worker's cores, when the worker starts the cell;
- :class:`Measurement` -> :func:`measured_columns` and :func:`window_rows`: the figures of a timed
  cell from the worker's raw numbers (window seconds, counts, checks);
- :func:`combine`: a co-tenant cell's row from its tenants' rows;
- :func:`not_measured_row`: an unsupported or failed cell;
- :func:`with_efficiency`: scaling efficiency and co-tenancy ratio against the run's earlier rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.analysis import metrics
from harness.spec.cell import Cell
from harness.spec.models import flops_per_example
from harness.spec.protocol import Protocol

LEARNING_RATE = 0.01

OPTIMIZER = f"SGD(learning_rate={LEARNING_RATE})"


def cell_columns(cell: Cell, protocol: Protocol) -> dict[str, Any]:
    """The columns that describe the cell and how it is timed (known before it runs)."""
    return {
        "cell_id": cell.id, "model": cell.model, "data": cell.data, "strategy": cell.strategy,
        "cross_device_ops": cell.cross_device_ops, "communication": cell.communication,
        "replicas": cell.replicas, "workers": cell.workers, "ps": cell.ps, "tenants": cell.tenants,
        "per_replica_batch": cell.per_replica_batch, "global_batch": cell.global_batch,
        "effective_batch": cell.effective_batch,
        "accum_steps": cell.accum_steps, "loop": cell.loop,
        "steps_per_execution": cell.steps_per_execution, "precision": cell.precision,
        "scaling": cell.scaling, "jit_compile": False, "optimizer": OPTIMIZER,
        "learning_rate": LEARNING_RATE, "flops_per_example": flops_per_example(cell.model),
        "window_target_s": protocol.window_s, "repeats": protocol.repeats,
        "warmup_windows": protocol.warmup_windows,
    }


def fact_columns(facts: dict[str, Any] | None) -> dict[str, Any]:
    """The columns that come from a worker's fingerprint facts (empty when none are known)."""
    if not facts:
        return {}
    return {
        "device_kind": facts["device_type"], "device_name": facts["device_name"],
        "host_cpu": facts["host_cpu"], "host_cores": facts["host_cores"],
        "intra_op_threads": facts["intra_op_threads"], "inter_op_threads": facts["inter_op_threads"],
        "tf_version": facts["tf_version"], "keras_version": facts["keras_version"],
        "python_version": facts["python_version"],
        "build_info": json.dumps({k: facts.get(k) for k in (
            "cuda_version", "cudnn_version", "rocm_version", "nvidia_driver", "tensor_float_32")}),
        "env": json.dumps(facts["env"], sort_keys=True), "fingerprint": facts["fingerprint"],
    }


def started_row(cell: Cell, protocol: Protocol, facts: dict[str, Any], cores: int | None,
                oversubscribed: bool | None) -> dict[str, Any]:
    """The row a worker starts from: the cell, its facts, and the cores each worker has (None: the
    whole host); ``oversubscribed`` None means every worker asks for ``cores`` of the host's."""
    cores = cores or facts["host_cores"]
    if oversubscribed is None:
        oversubscribed = cores * cell.workers > facts["host_cores"]
    return {**cell_columns(cell, protocol), **fact_columns(facts), "cores_per_worker": cores,
            "oversubscribed": oversubscribed}


@dataclass(frozen=True)
class Measurement:
    """What a worker measured in one timed cell, as raw numbers (times in seconds).

    ``window_seconds``: each timed window's wall time; ``worker_seconds``: each worker's own time
    of each window (multi-worker cells; else the windows themselves); ``worker_updates``: the
    updates each worker ran in each window (parameter server; else empty); ``problems``: what the
    integrity checks found; ``peak_flops_per_sec``: the matmul peak of one device (None: not
    measured); ``joules``: energy over the timed windows (None: no counter).
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
    peak_flops_per_sec: float | None
    joules: float | None


def _window_throughputs(cell: Cell, m: Measurement) -> tuple[int, list[float]]:
    """(examples per window, each timed window's examples/s)."""
    examples = m.window_steps * cell.effective_batch
    return examples, metrics.window_throughputs(m.window_seconds, examples)


def measured_columns(cell: Cell, m: Measurement) -> dict[str, Any]:
    """The figures of a timed cell (an invalid cell never reports a throughput)."""
    examples, rates = _window_throughputs(cell, m)
    median = metrics.median(rates)
    lo, hi = metrics.bootstrap_ci(rates)
    device_count = m.hosts if m.device_kind == "CPU" else cell.devices
    peak = None if m.peak_flops_per_sec is None else m.peak_flops_per_sec * device_count
    reductions = m.allreduces_per_update
    row = {
        "status": "invalid" if m.problems else "ok", "reason": "; ".join(m.problems),
        "effective_cross_device_ops": m.effective_cross_device_ops,
        "examples_per_sec": median, "examples_per_sec_ci_low": lo, "examples_per_sec_ci_high": hi,
        "cv": metrics.cv(rates), "window_steps": m.window_steps, "startup_s": m.startup_s,
        "compile_s": m.compile_s, "peak_flops_per_sec": peak,
        "mfu": None if peak is None else metrics.mfu(median, flops_per_example(cell.model), peak),
        "final_loss": m.final_loss, "optimizer_updates_per_sec": median / cell.effective_batch,
        "allreduces_per_update": reductions,
        "allreduces_per_example": None if reductions is None else reductions / cell.effective_batch,
        "weights_digest": m.weights_digest, "device_count": device_count,
        "logical_devices": m.device_kind == "CPU" and cell.devices > m.hosts,  # local workers share a CPU
        "hosts": m.hosts,
        "straggler_ratio": (metrics.update_imbalance(m.worker_updates) if m.worker_updates
                            else metrics.straggler_ratio(m.worker_seconds)),
        "updates_run": m.updates_run, "optimizer_iterations": m.optimizer_iterations,
        "energy_j_per_example": None if m.joules is None else m.joules / (m.updates_run * cell.effective_batch),
    }
    row.update(alone_columns(row))
    if m.problems:
        row.update({k: None for k in ("examples_per_sec", "examples_per_sec_ci_low",
                                      "examples_per_sec_ci_high", "mfu", "optimizer_updates_per_sec")})
    return row


def window_rows(cell: Cell, m: Measurement) -> list[dict[str, Any]]:
    """One row per worker and timed window: the window's time and throughput, the worker's own time
    (or, under the parameter server, the updates that worker ran in it)."""
    examples, rates = _window_throughputs(cell, m)
    base = {"cell_id": cell.id, "window_steps": m.window_steps, "examples": examples}
    if m.worker_updates:  # the coordinator's windows, split by the updates each worker ran
        return [{**base, "worker": w, "repeat": i, "window_s": s, "worker_s": None,
                 "worker_updates": m.worker_updates[w][i], "examples_per_sec": r}
                for w in range(len(m.worker_updates))
                for i, (s, r) in enumerate(zip(m.window_seconds, rates))]
    return [{**base, "worker": w, "repeat": i, "window_s": s, "worker_s": m.worker_seconds[w][i],
             "examples_per_sec": r}
            for w in range(len(m.worker_seconds))
            for i, (s, r) in enumerate(zip(m.window_seconds, rates))]


def not_measured_row(cell: Cell, protocol: Protocol, status: str, reason: str,
                     facts: dict[str, Any] | None) -> dict[str, Any]:
    """A row for a cell that produced no figures (unsupported, failed)."""
    return {**cell_columns(cell, protocol), **fact_columns(facts), "status": status, "reason": reason}


EFFICIENCY_KEY = ("model", "data", "strategy", "cross_device_ops", "communication", "loop",
                  "steps_per_execution", "precision", "accum_steps", "tenants")

ALONE_KEY = tuple(k for k in EFFICIENCY_KEY if k != "tenants") + ("replicas", "workers", "ps",
                                                                   "per_replica_batch", "scaling")


def find_alone(row: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ok row of the same cell with one tenant (co-tenancy's reference)."""
    for other in rows:
        if (other.get("status") == "ok" and other.get("tenants", 1) == 1
                and all(other.get(k) == row.get(k) for k in ALONE_KEY)):
            return other
    return None


def find_baseline(row: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ok 1-device row of the same configuration: same per-replica batch (weak scaling) or same
    global batch (strong scaling)."""
    batch_key = "global_batch" if row["scaling"] == "strong" else "per_replica_batch"
    for other in rows:
        if (other.get("status") == "ok" and other["replicas"] * other["workers"] == 1
                and all(other[k] == row[k] for k in EFFICIENCY_KEY)
                and other[batch_key] == row[batch_key]):
            return other
    return None


RATE_COLUMNS = ("examples_per_sec", "examples_per_sec_ci_low", "examples_per_sec_ci_high", "cv",
                "mfu", "optimizer_updates_per_sec")


def alone_columns(row: dict[str, Any]) -> dict[str, Any]:
    """The tenant columns of a cell that ran alone (one tenant)."""
    eps = row.get("examples_per_sec")
    return {"tenant_examples_per_sec_min": eps, "tenant_examples_per_sec_max": eps,
            "tenant_share_min": 1.0 if eps else None}


def combine(rows: list[dict[str, Any]], windows: list[list[dict[str, Any]]], effective_batch: int
            ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One row and the window rows of a co-tenant cell from each tenant's row and windows."""
    bad = next(((i, r) for i, r in enumerate(rows) if r.get("status") != "ok"), None)
    tagged = [{**w, "worker": i} for i, ws in enumerate(windows) for w in ws]
    if bad is not None:
        i, r = bad
        out = {**r, "reason": f"tenant {i} of {len(rows)}: {r.get('reason', '')}"}
        out.update({k: None for k in RATE_COLUMNS})
        return out, tagged
    per_tenant = [[w["examples_per_sec"] for w in ws] for ws in windows]
    repeats = min(len(p) for p in per_tenant)
    sums = [sum(p[k] for p in per_tenant) for k in range(repeats)]
    medians = [metrics.median(p) for p in per_tenant]
    aggregate = metrics.median(sums)
    lo, hi = metrics.bootstrap_ci(sums)
    out = {**rows[0], "examples_per_sec": aggregate, "examples_per_sec_ci_low": lo,
           "examples_per_sec_ci_high": hi, "cv": metrics.cv(sums),
           "optimizer_updates_per_sec": aggregate / effective_batch,
           "tenant_examples_per_sec_min": min(medians), "tenant_examples_per_sec_max": max(medians),
           "tenant_share_min": min(medians) / aggregate,
           "straggler_ratio": max(medians) / min(medians)}
    mfus = [r.get("mfu") for r in rows]
    out["mfu"] = sum(mfus) if all(m is not None for m in mfus) else None  # type: ignore[misc]
    return out, tagged


def with_efficiency(row: dict[str, Any], earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """The row plus scaling_efficiency and baseline_cell_id against the run's rows so far, and for
    co-tenant cells cotenancy_ratio against the same cell alone."""
    if row.get("status") != "ok":
        return row
    if row.get("tenants", 1) > 1:
        alone = find_alone(row, earlier)
        if alone is not None:
            row = {**row, "cotenancy_ratio": row["examples_per_sec"] / alone["examples_per_sec"]}
    base = row if row["replicas"] * row["workers"] == 1 else find_baseline(row, earlier)
    if base is None:
        return {**row, "baseline_cell_id": ""}
    eff = metrics.scaling_efficiency(row["examples_per_sec"], row["replicas"] * row["workers"],
                                     base["examples_per_sec"])
    return {**row, "scaling_efficiency": eff, "baseline_cell_id": base["cell_id"]}
