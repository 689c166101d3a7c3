"""The table printed at the end of a run: model x strategy x replicas, examples/s with CI, efficiency."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _num(x: Any, fmt: str) -> str:
    return "-" if x is None or x != x else format(x, fmt)


OPTIONAL_AXES = ("data", "precision", "steps_per_execution", "loop", "accum_steps", "scaling")
"""Shown as extra columns when they vary between the rows."""


def fixed_width(lines: Sequence[Sequence[str]], rule: bool = True) -> str:
    """Rows as left-aligned columns two spaces apart (the last column unpadded), with a rule under
    the first (header) row when ``rule``."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    out = ["  ".join(c.ljust(w) for c, w in zip(line[:-1], widths)) + "  " + line[-1] for line in lines]
    if rule:
        out.insert(1, "-" * len(out[0]))
    return "\n".join(out)


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table of the rows, in the order given."""
    extra = [a for a in OPTIONAL_AXES if len({r.get(a) for r in rows}) > 1]
    header = ("model", "strategy[cross-device ops]", "repl", "batch/repl", *extra, "examples/s",
              "95% CI", "cv", "efficiency", "status")
    lines = [header]
    for r in rows:
        strategy = r["strategy"] + "".join(f"[{r[k]}]" for k in ("cross_device_ops", "communication")
                                           if r.get(k) not in (None, "none"))
        ci = (f"{_num(r.get('examples_per_sec_ci_low'), ',.0f')}..{_num(r.get('examples_per_sec_ci_high'), ',.0f')}"
              if r.get("examples_per_sec") is not None else "-")
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {(r.get('reason') or '')[:60]}"
        topology = (f"{r['replicas']}x{r['workers']}" + (f"+{r['ps']}ps" if r.get("ps") else "")
                    + (f" t{r['tenants']}" if (r.get("tenants") or 1) > 1 else ""))
        lines.append((r["model"], strategy, topology, str(r["per_replica_batch"]),
                      *(str(r.get(a)) for a in extra),
                      _num(r.get("examples_per_sec"), ",.0f") + ("*" if r.get("oversubscribed") else ""), ci, _num(r.get("cv"), ".1%"),
                      _num(r.get("scaling_efficiency"), ".2f"), status))
    return fixed_width(lines)


FOOTNOTE = ("examples/s: median of {repeats} timed windows of ~{window_s:g} s each (warm-up excluded), "
            "95% CI by percentile bootstrap; efficiency = throughput / (replicas x 1-replica throughput)"
            "; repl 'NxW' = replicas x workers ('+Pps': parameter-server tasks; 'tT': T co-tenant "
            "processes, examples/s their aggregate).")


OVERSUBSCRIBED_NOTE = ("* measured with oversubscribed cores (cores_per_worker x (workers + ps) > host "
                       "cores).")


LOGICAL_NOTE = ("Replicas here are logical CPU devices (or local workers) sharing one CPU: extra "
                "replicas add no compute, so efficiency near 1/N is expected and says nothing about "
                "real devices.")
