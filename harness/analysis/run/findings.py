"""What a run found, as ratios with CIs: the comparisons measured in turns (the ratios table), each
relation titled, each configuration in words, each with its verdict (:mod:`harness.formulas.verdicts`).
Pure. Figures of separately measured processes are never ranked here: the only fastest is the one
raced in turns (:mod:`harness.analysis.run.answer`). :func:`figures` serves the comparisons across
runs, which cannot take turns."""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.analysis.run import render
from harness.analysis.run.answer import labels
from harness.contract.records import CellRow, RatioRow
from harness.formulas.verdicts import phrase
from harness.spec.groups import Relation


def figures(row: CellRow) -> list[float]:
    """The row's process figures, examples/s (its single figure for rows from before processes)."""
    values = row.spread.process_examples_per_sec
    return [float(v) for v in values] if values else [float(row.examples_per_sec.value or math.nan)]


RELATION_TITLES: dict[Relation, str] = {
    Relation.FASTEST: "Which is fastest: each model's contenders, raced in turns, against the leader",
    Relation.SCALING: "Scaling: throughput against one device (the ratio shown is the efficiency)",
    Relation.STRATEGY: "Strategy: against no distribution strategy at the same model, batch and loop",
    Relation.CROSS_DEVICE_OPS: "All-reduce (cross-device ops): against the default at the same replicas",
    Relation.ACCUMULATION: "Gradient accumulation: k micro-batches per update against 1",
    Relation.LOOP: "Training loop: Keras fit against the custom loop",
    Relation.XLA: "XLA: the training step compiled with jit_compile=True against without",
    Relation.OPTIMIZER: "Optimizer: Adam against plain SGD at the same learning rate",
    Relation.PRECISION: "Precision: mixed precision against float32",
    Relation.BATCH: "Batch: examples/s at another batch per replica against batch 64",
    Relation.STEPS_PER_EXECUTION: "Updates per tf.function call: against 10",
    Relation.COTENANCY: "Co-tenants: T processes' aggregate against one alone",
    Relation.SHARED: "A co-tenant from another framework: each side together against itself alone",
    Relation.AB: "A/B: side B against side A",
}
"""Each relation of the ratios table, as the report titles it (in this order)."""

RELATION_WORDS: dict[Relation, str] = {
    Relation.FASTEST: "against the leader",
    Relation.SCALING: "scaling efficiency",
    Relation.STRATEGY: "strategy",
    Relation.CROSS_DEVICE_OPS: "all-reduce",
    Relation.ACCUMULATION: "accumulation",
    Relation.LOOP: "training loop",
    Relation.XLA: "XLA",
    Relation.OPTIMIZER: "optimizer",
    Relation.PRECISION: "precision",
    Relation.BATCH: "batch",
    Relation.STEPS_PER_EXECUTION: "updates per call",
    Relation.COTENANCY: "co-tenants",
    Relation.SHARED: "with another framework",
    Relation.AB: "A/B",
}
"""Each relation in a word or two, as a table's comparison column names it."""


def ratio_text(r: RatioRow) -> str:
    """``0.512 [0.497, 0.528], 12 instances: lower``, or the undecided note."""
    value, low, high = r.ratio.value, r.ratio.low, r.ratio.high
    if value is None:
        return r.note or "not measured"
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else " (no CI)"
    scaled = r.relation == Relation.SCALING
    text = f"{value:.3f}{ci}, {r.instances} instances: {phrase(r.verdict, scaled)}"
    extra = r.extra_instances
    if not r.decided and extra is not None and extra > 0:
        text += f" (about {extra} more instance{'' if extra == 1 else 's'} would likely decide it)"
    return text


def render_html(rows: Sequence[CellRow], ratios: Sequence[RatioRow] = ()) -> str:
    """The report's comparisons: those measured in turns (the only source of ratios and of a
    fastest configuration; figures of separately measured processes are shown as figures with
    their CIs in the summary, never ranked), grouped by relation, each configuration in words
    (:func:`harness.analysis.run.answer.labels`)."""
    return render.page(
        "findings.html",
        ratios=ratios,
        titles=RELATION_TITLES,
        named=labels(rows),
        model={r.cell.cell_id: r.cell.model for r in rows},
        text=ratio_text,
    ).rstrip("\n")
