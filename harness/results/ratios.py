"""The rows of the ratios table (:class:`harness.contract.records.RatioRow`) from the comparisons a
run measured in turns, and the cell-row columns that come from them. Pure.

Every comparison's verdict is made across all of the run's comparisons at once, controlling the
false discovery rate (:func:`harness.formulas.turns.fdr_verdicts`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness.contract.columns import Estimate, finite
from harness.contract.records import CellRow, RatioRow, RunInfo, Status
from harness.formulas import turns
from harness.formulas.stats import MIN_EFFECT
from harness.formulas.verdicts import DECIDED
from harness.spec.frameworks import NONE, tenant_key, together_key
from harness.spec.groups import Comparison, Relation


@dataclass(frozen=True)
class Evidence:
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


def ratio_rows(
    measured: Sequence[Evidence],
    run: RunInfo,
    fingerprint: str | None,
    blocks: int,
    turn_s: float,
    min_effect: float = MIN_EFFECT,
) -> list[RatioRow]:
    """One row per comparison of ``run`` (``fingerprint``: the one its processes reported), its
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
        rows.append(
            RatioRow(
                run=run,
                fingerprint=fingerprint,
                relation=m.comparison.relation,
                subject=m.comparison.subject,
                reference=m.comparison.reference,
                group=m.group,
                ratio=Estimate(finite(r.value), finite(r.low), finite(r.high)),
                scale=m.comparison.scale,
                instances=r.instances,
                blocks=blocks,
                turn_s=turn_s,
                min_effect=min_effect,
                sd_between=finite(r.sd_between),
                sd_within=finite(r.sd_within),
                p_value=finite(r.p_value),
                verdict=verdict,
                decided=decided,
                extra_instances=extra,
                extra_s=None if extra is None else extra * m.seconds_per_instance,
                dropped_instances=m.dropped,
                note=m.note,
                disturbed_blocks=m.disturbed_blocks,
            )
        )
    return rows


def _with_ratio(row: CellRow, relation: Relation, r: RatioRow) -> CellRow:
    """The row with one ratio measured in turns in the column its relation fills."""
    if relation == Relation.SCALING:
        efficiency = replace(
            row.efficiency,
            scaling_efficiency=r.ratio,
            baseline_cell_id=r.reference,
            ratio_instances=r.instances,
        )
        return replace(row, efficiency=efficiency)
    if relation == Relation.COTENANCY:
        return replace(row, tenancy=replace(row.tenancy, cotenancy_ratio=r.ratio))
    cell, framework = row.cell.cell_id, row.cell.tenant_framework
    if r.subject == together_key(cell):
        return replace(row, foreign=replace(row.foreign, shared_ratio=r.ratio))
    if framework and r.subject == together_key(tenant_key(cell, framework)):
        return replace(row, foreign=replace(row.foreign, tenant_shared_ratio=r.ratio))
    return row


CELL_RELATIONS = (Relation.SCALING, Relation.COTENANCY)
"""The relations whose ratio is also a figure of the subject's cell row (besides SHARED's)."""


def with_turn_ratios(row: CellRow, rows: Sequence[RatioRow]) -> CellRow:
    """The cell row with scaling_efficiency and cotenancy_ratio (and their CIs) from the ratios
    measured in turns where the run measured them (they replace the figures from separate
    processes); ``baseline_cell_id`` names the scaling reference. A cell with a co-tenant from
    another framework gets shared_ratio and tenant_shared_ratio from its SHARED ratios."""
    if row.status != Status.OK:
        return row
    framework = row.cell.tenant_framework
    for r in rows:
        if r.ratio.value is None:
            continue
        if (r.relation == Relation.SHARED and framework and framework != NONE) or (
            r.relation in CELL_RELATIONS and r.subject == row.cell.cell_id
        ):
            row = _with_ratio(row, r.relation, r)
    return row
