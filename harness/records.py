"""Building result rows (plain dicts keyed by the columns of :mod:`harness.store`). No TensorFlow."""

from __future__ import annotations

import json
from typing import Any

from harness.models import MODELS
from harness.spec import Cell, Protocol

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
        "learning_rate": LEARNING_RATE, "flops_per_example": MODELS[cell.model].flops_per_example,
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
