"""The rows of the ratios table (:class:`harness.contract.records.RatioRow`) from the comparisons a
run measured in turns, and the cell-row columns that come from them. Pure.

Every comparison's verdict is made across all of the run's comparisons at once, controlling the
false discovery rate (:func:`harness.formulas.turns.fdr_verdicts`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from harness.contract.records import CellRow, RatioRow, Status
from harness.formulas import turns
from harness.formulas.stats import MIN_EFFECT
from harness.formulas.verdicts import DECIDED
from harness.spec.frameworks import NONE, tenant_key, together_key
from harness.spec.groups import Comparison, Relation


@dataclass(frozen=True)
class Measured:
    """One comparison and its evidence: each completed instance's log ratio and block log ratios,
    the group that measured it, its wall seconds per instance and its dropped instances."""

    comparison: Comparison
    group: str
    instance_logs: tuple[float, ...]
    block_logs: tuple[tuple[float, ...], ...]
    seconds_per_instance: float
    dropped: int = 0
    note: str = ""
    """Why it was not measured in turns (empty when it was)."""
    disturbed_blocks: int = 0
    """Blocks of its group's instances left out: something else used the CPUs in a turn."""

    def ratio(self) -> turns.TurnRatio:
        return turns.turn_ratio(self.instance_logs, self.block_logs, self.comparison.scale)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def ratio_rows(
    measured: Sequence[Measured],
    base: Mapping[str, object],
    blocks: int,
    turn_s: float,
    min_effect: float = MIN_EFFECT,
) -> list[RatioRow]:
    """One row per comparison (``base``: run_id, suite_version, timestamp, fingerprint), its
    verdict controlling the FDR across all of them."""
    ratios = [m.ratio() for m in measured]
    verdicts = turns.fdr_verdicts(ratios, min_effect)
    rows: list[RatioRow] = []
    for m, r, verdict in zip(measured, ratios, verdicts, strict=True):
        needed = turns.instances_to_decide(m.instance_logs, min_effect)
        decided = verdict in DECIDED  # after the false-discovery control, as the verdict says
        # one held back by the false-discovery control alone is decided on its own: one more
        # instance narrows its p-value
        extra = 0 if decided else (None if needed is None else max(needed - r.instances, 1))
        row: RatioRow = {
            "relation": str(m.comparison.relation),
            "subject": m.comparison.subject,
            "reference": m.comparison.reference,
            "group": m.group,
            "ratio": _finite(r.value),
            "ratio_ci_low": _finite(r.low),
            "ratio_ci_high": _finite(r.high),
            "scale": m.comparison.scale,
            "instances": r.instances,
            "blocks": blocks,
            "turn_s": turn_s,
            "sd_between": _finite(r.sd_between),
            "sd_within": _finite(r.sd_within),
            "p_value": _finite(r.p_value),
            "verdict": verdict,
            "decided": decided,
            "extra_instances": extra,
            "extra_s": None if extra is None else extra * m.seconds_per_instance,
            "dropped_instances": m.dropped,
            "note": m.note,
            "disturbed_blocks": m.disturbed_blocks,
        }
        rows.append(RatioRow(**{**base, **row}))  # type: ignore[typeddict-item]
    return rows


CELL_RATIO_COLUMNS = {Relation.SCALING: "scaling_efficiency", Relation.COTENANCY: "cotenancy_ratio"}
"""The relations whose ratio is also a column of the subject's cell row."""


def _shared_columns(row: CellRow) -> dict[str, str]:
    """A cell with a co-tenant from another framework: the SHARED comparisons' subjects (each
    side's turns together) -> the column their ratio fills."""
    framework, cell = row.get("tenant_framework"), str(row.get("cell_id"))
    if not framework or framework == NONE:
        return {}
    return {
        together_key(cell): "shared_ratio",
        together_key(tenant_key(cell, framework)): "tenant_shared_ratio",
    }


def with_turn_ratios(row: CellRow, rows: Sequence[RatioRow]) -> CellRow:
    """The cell row with scaling_efficiency and cotenancy_ratio (and their CIs) from the ratios
    measured in turns where the run measured them (they replace the figures from separate
    processes); ``baseline_cell_id`` names the scaling reference. A cell with a co-tenant from
    another framework gets shared_ratio and tenant_shared_ratio from its SHARED ratios."""
    if row.get("status") != Status.OK:
        return row
    out = dict(row)
    shared = _shared_columns(row)
    for r in rows:
        column = CELL_RATIO_COLUMNS.get(Relation(r["relation"]))
        if Relation(r["relation"]) == Relation.SHARED:
            column = shared.get(r["subject"])
        elif r["subject"] != row.get("cell_id"):
            continue
        if column is None or r.get("ratio") is None:
            continue
        out.update(
            {
                column: r["ratio"],
                f"{column}_ci_low": r["ratio_ci_low"],
                f"{column}_ci_high": r["ratio_ci_high"],
            }
        )
        if column == "scaling_efficiency":
            out["baseline_cell_id"] = r["reference"]
            out["ratio_instances"] = r["instances"]
    return cast(CellRow, out)  # a dict of its columns, checked by the schema's tests
