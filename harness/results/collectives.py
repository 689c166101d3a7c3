"""The collectives table's rows (results/collectives; columns in
:data:`harness.results.store.TABLES`), from the processes of one topology. Pure.
Each figure and status as results/README.md ("The collectives table") defines it, the row
``invalid`` above :data:`MAX_REL_ERROR`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.contract.events import Facts
from harness.contract.records import CollectiveRow, Status
from harness.formulas import stats
from harness.formulas.bandwidth import algbw_gbps, busbw_gbps
from harness.spec.cell import Cell

MAX_REL_ERROR = 1e-6
"""Largest relative deviation from n(n+1)/2 accepted as a right sum (float32 sums of small integers
are exact; any deviation is a wrong reduction)."""


def topology_columns(cell: Cell, facts: Facts | None) -> CollectiveRow:
    """What every row of the topology shares: strategy, op, replicas, workers, devices, facts."""
    facts = facts or {}
    return {
        "fingerprint": facts.get("fingerprint"),
        "device_kind": facts.get("device_type"),
        "device_name": facts.get("device_name"),
        "host_cores": facts.get("host_cores"),
        "tf_version": facts.get("tf_version"),
        "strategy": cell.strategy,
        "op": cell.option,
        "replicas": cell.replicas,
        "workers": cell.workers,
        "devices": cell.replicas * cell.workers,
    }


def topology_label(cell: Cell) -> str:
    """``mirrored[auto] 2x1``: strategy[op] replicas x workers."""
    return f"{cell.strategy}[{cell.option}] {cell.replicas}x{cell.workers}"


def not_measured(cell: Cell, facts: Facts | None, status: Status, reason: str) -> CollectiveRow:
    """The one row of a topology that was not measured (unsupported, failed)."""
    return {**topology_columns(cell, facts), "status": status, "reason": reason, "payload": ""}


def _payload_row(cell: Cell, per_process: Sequence[Mapping[str, Any]]) -> CollectiveRow:
    first = per_process[0]
    times = [float(p["time_s"]) for p in per_process]
    est = stats.figure(times)
    error = max(float(p["max_rel_error"]) for p in per_process)
    wrong = error > MAX_REL_ERROR
    n = cell.replicas * cell.workers
    return {
        "payload": first["payload"],
        "tensors": first["tensors"],
        "bytes": first["bytes"],
        "status": Status.INVALID if wrong else Status.OK,
        "reason": (
            f"wrong sum: the all-reduce's result deviates by {error:.3g} (relative) from {n}({n}+1)/2"
            if wrong
            else ""
        ),
        "time_s": est.value,
        "time_s_ci_low": None if est.n < 2 else est.low,
        "time_s_ci_high": None if est.n < 2 else est.high,
        "processes": len(times),
        "process_time_s": times,
        "calls": first.get("calls"),
        "max_rel_error": error,
        "algbw_gbps": algbw_gbps(first["bytes"], est.value),
        "busbw_gbps": busbw_gbps(first["bytes"], est.value, n),
    }


@dataclass(frozen=True)
class TopologyReport:
    """One process's report of a topology: how it ended, the all-reduce implementation it used,
    and one result per payload (:func:`harness.worker.collectives.measure_collectives`)."""

    status: Status
    reason: str = ""
    effective_op: str | None = None
    payloads: tuple[Mapping[str, Any], ...] = ()


def topology_rows(
    cell: Cell, processes: Sequence[TopologyReport], facts: Facts | None
) -> list[CollectiveRow]:
    """The rows of one topology from its processes' reports; a failed process fails the topology."""
    bad = next((p for p in processes if p.status != Status.OK), None)
    if bad is not None or not processes:
        reason = (bad.reason if bad else "") or "no process reported"
        return [not_measured(cell, facts, Status.FAILED, reason)]
    base: CollectiveRow = {**topology_columns(cell, facts), "effective_op": processes[-1].effective_op}
    by_payload: dict[str, list[Mapping[str, Any]]] = {}
    for p in processes:
        for result in p.payloads:
            by_payload.setdefault(f"{result['payload']}/{result['bytes']}", []).append(result)
    return [{**base, **_payload_row(cell, results)} for results in by_payload.values()]
