"""The suite's own cost, run against run: each run's costs row (``results/costs``) in words, the
candidate's against the baseline runs' median (``compare`` prints it; it gates nothing)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

TRACKED = {"wall_s": ("wall", "s"), "fixed_s_per_process": ("fixed cost per measured process", "s")}
"""The costs columns ``compare`` reports, with their words and unit."""


def cost_text(costs: pd.DataFrame, candidate: Sequence[str], baseline: Sequence[str]) -> str:
    """``suite cost: wall 612 s (baseline median 1,780 s over 5 runs, -66 %); ...``, or "" when the
    candidate runs have no costs row (a real cluster's run, or one older than the table)."""
    mine = costs[costs["run_id"].isin(candidate)]
    if mine.empty:
        return ""
    before = costs[costs["run_id"].isin(baseline)]
    parts = []
    for column, (words, unit) in TRACKED.items():
        now = mine[column].dropna()
        if now.empty:
            continue
        value = float(now.median())
        text = f"{words} {value:,.1f} {unit}"
        old = before[column].dropna()
        if not old.empty:
            ref = float(old.median())
            change = f", {value / ref - 1:+.0%}" if ref > 0 else ""
            runs = "run" if len(old) == 1 else "runs"
            text += f" (baseline median {ref:,.1f} {unit} over {len(old)} {runs}{change})"
        parts.append(text)
    return "suite cost: " + "; ".join(parts) if parts else ""
