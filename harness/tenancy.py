"""Co-tenancy: T independent processes of one cell on the same devices, combined into one row.

Every tenant is an ordinary single-process cell run; they start together, wait for each other
after their first call (a file barrier, :func:`harness.worker.tenant_barrier`), then calibrate and
time their windows at the same time. :func:`combine` (pure) makes the cell's row:

- ``examples_per_sec``: the median over repeat k of the sum over tenants of window k's throughput
  (window k of every tenant runs at about the same time); its CI is the bootstrap CI of those sums;
- ``tenant_examples_per_sec_min`` / ``_max``: the slowest and fastest tenant's own median;
- ``tenant_share_min``: the slowest tenant's median / the aggregate (1/T is a fair split).

Any tenant that fails or is invalid makes the cell so, its reason prefixed with the tenant.
"""

from __future__ import annotations

from typing import Any

from harness import metrics

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
