"""What a run found, as ratios with CIs: first the comparisons measured in turns (the ratios
table: each relation, and the race of the configurations tied with each model's fastest), then,
for pairs the run did not measure in turns, per model the fastest configuration and those tied with
it and what each other knob changes. Pure (rows in, :class:`Finding` out).

A ratio in turns has its CI over group instances and its verdict controls the false discovery rate
across the run's comparisons (:mod:`harness.formulas.turns`). A ratio between separately measured
rows has Welch's t over the two rows' process figures (:func:`harness.formulas.stats.ratio`).
Either way its verdict is higher, lower, equivalent or undecided
(:mod:`harness.formulas.verdicts`), never a ranking the CI does not support.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.contract.records import CellRow, RatioRow, Status
from harness.formulas import stats
from harness.formulas.verdicts import LOWER, phrase
from harness.spec.groups import Relation

CELL_AXES = (
    "model",
    "data",
    "strategy",
    "cross_device_ops",
    "communication",
    "replicas",
    "workers",
    "ps",
    "tenants",
    "per_replica_batch",
    "accum_steps",
    "loop",
    "steps_per_execution",
    "precision",
    "xla",
    "scaling",
)
"""The fields of :class:`~harness.contract.records.Axes` that tell two configurations apart."""


def axis(row: CellRow, name: str) -> object:
    """The value of one of :data:`CELL_AXES` in the row."""
    if name not in CELL_AXES:
        raise KeyError(f"{name} is not one of {CELL_AXES}")
    return getattr(row.cell, name)


@dataclass(frozen=True)
class Knob:
    """An axis whose effect is reported: ``reference`` is the value others are compared against
    (None: the smallest); ``same``: axes that may differ along with it (collapsed options)."""

    axis: str
    title: str
    reference: Any = None
    same: tuple[str, ...] = ()


KNOBS: tuple[Knob, ...] = (
    Knob("accum_steps", "gradient accumulation"),
    Knob("cross_device_ops", "cross-device ops", reference="auto"),
    Knob("replicas", "replicas", same=("cross_device_ops",)),
    Knob("workers", "workers", same=("communication",)),
    Knob("loop", "training loop", reference="ctl"),
    Knob("precision", "precision", reference="float32"),
    Knob("xla", "XLA", reference="off"),
    Knob("steps_per_execution", "steps per execution"),
    Knob("tenants", "co-tenant processes"),
)


@dataclass(frozen=True)
class Finding:
    """``changed`` against ``reference`` (two rows equal but for ``axis``): throughput ratio."""

    model: str
    axis: str
    reference: str
    changed: str
    context: str
    ratio: stats.Ratio
    pair: tuple[str, str] = ("", "")
    """(cell_id of the changed row, cell_id of the reference row)."""

    @property
    def verdict(self) -> str:
        return describe(self.ratio)


def describe(r: stats.Ratio) -> str:
    """``1.32x [1.18, 1.47]: higher`` (or lower, equivalent, undecided: :mod:`harness.formulas.verdicts`)."""
    if r.low != r.low:  # NaN: fewer than two processes on a side
        return f"{r.value:.2f}x (no CI: fewer than 2 processes): undecided"
    return f"{r.value:.2f}x [{r.low:.2f}, {r.high:.2f}]: {r.verdict()}"


def figures(row: CellRow) -> list[float]:
    """The row's process figures, examples/s (its single figure for rows from before processes)."""
    values = row.spread.process_examples_per_sec
    if not values:
        return [float(row.examples_per_sec.value or math.nan)]
    return [float(v) for v in values]


SHORT = {
    "replicas": "r",
    "workers": "w",
    "per_replica_batch": "b",
    "accum_steps": "acc",
    "steps_per_execution": "spe",
    "tenants": "t",
}
"""The axes :func:`config` writes as a letter and a number."""


def config(row: CellRow, skip: Iterable[str] = ("model",)) -> str:
    """A short text of a row's configuration, without the ``skip`` axes."""
    skip = tuple(skip)
    options = "".join(
        f"[{axis(row, k)}]"
        for k in ("cross_device_ops", "communication")
        if axis(row, k) not in (None, "none") and k not in skip
    )
    parts = [f"{row.cell.strategy}{options}"]
    parts += [
        f"{short}{axis(row, a)}" for a, short in SHORT.items() if a not in skip and axis(row, a) is not None
    ]
    parts += [str(axis(row, a)) for a in ("loop", "precision") if a not in skip and axis(row, a) is not None]
    parts += ["xla"] if "xla" not in skip and axis(row, "xla") == "on" else []
    return " ".join(parts)


def _ok(rows: Sequence[CellRow]) -> list[CellRow]:
    return [r for r in rows if r.status == Status.OK and r.examples_per_sec.value]


def fastest(rows: Sequence[CellRow], model: str) -> tuple[CellRow, list[tuple[CellRow, stats.Ratio]]] | None:
    """The model's fastest ok row and every other row tied with it (ratio to it not
    distinguishable), with that ratio; None without ok rows."""
    mine = [r for r in _ok(rows) if r.cell.model == model]
    if not mine:
        return None
    best = max(mine, key=lambda r: r.examples_per_sec.value or 0.0)
    tied = [(r, stats.ratio(figures(r), figures(best))) for r in mine if r is not best]
    return best, [(r, q) for r, q in tied if not q.distinguishable()]


def _key(row: CellRow, knob: Knob) -> tuple[object, ...]:
    return tuple(axis(row, a) for a in CELL_AXES if a != knob.axis and a not in knob.same)


def effects(rows: Sequence[CellRow], knob: Knob) -> list[Finding]:
    """Every pair of ok rows equal but for ``knob.axis``: the other value against the reference."""
    groups: dict[tuple[object, ...], list[CellRow]] = {}
    for r in _ok(rows):
        groups.setdefault(_key(r, knob), []).append(r)
    found = []
    for members in groups.values():
        values = {axis(r, knob.axis) for r in members}
        if len(values) < 2:
            continue
        ref_value = knob.reference if knob.reference in values else min(values, key=_order)
        ref = next(r for r in members if axis(r, knob.axis) == ref_value)
        for r in members:
            if r is not ref:
                found.append(
                    Finding(
                        r.cell.model,
                        knob.axis,
                        str(ref_value),
                        str(axis(r, knob.axis)),
                        config(ref, ("model", knob.axis, *knob.same)),
                        stats.ratio(figures(r), figures(ref)),
                        (r.cell.cell_id, ref.cell.cell_id),
                    )
                )
    return sorted(found, key=lambda f: (f.model, f.context, f.changed))


def _order(value: object) -> tuple[int, object]:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def all_effects(rows: Sequence[CellRow]) -> dict[str, list[Finding]]:
    """:func:`effects` of every knob in :data:`KNOBS` that the rows vary (title -> findings)."""
    out = {}
    for knob in KNOBS:
        found = effects(rows, knob)
        if found:
            out[knob.title] = found
    return out


RELATION_TITLES: dict[Relation, str] = {
    Relation.FASTEST: "Which configuration is fastest: each model's contenders raced in turns against the fastest of them",
    Relation.SCALING: "Scaling: throughput against the 1-device cell (the ratio shown is the efficiency)",
    Relation.STRATEGY: "Strategy: throughput against default at the same model, batch and loop",
    Relation.CROSS_DEVICE_OPS: "Cross-device ops: against auto at the same replicas",
    Relation.ACCUMULATION: "Gradient accumulation: k micro-batches per update against 1",
    Relation.LOOP: "Training loop: Keras fit against the custom loop",
    Relation.XLA: "XLA: the training step compiled with jit_compile=True against without",
    Relation.COTENANCY: "Co-tenants: T processes' aggregate against one alone",
    Relation.SHARED: "A co-tenant from another framework: each side together against itself alone",
    Relation.AB: "A/B: side B against side A",
}
"""Each relation of the ratios table, as the report titles it (in this order)."""


def _ratio_text(r: RatioRow) -> str:
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


def _leader_text(key: str, raced: Sequence[RatioRow], by_id: Mapping[str, CellRow]) -> str:
    """A race's head line: ``cnn: fastest default ... (9,284 examples/s); each contender against
    it:``, or ``leading`` where a contender is not decided lower than it."""
    leader = by_id.get(key)
    mine = [r for r in raced if r.reference == key]
    if mine and all(r.ratio.value is None for r in mine):
        model = leader.cell.model if leader is not None else key
        return f"{model}: not measured (each contender's note says why)"
    decided = bool(mine) and all(r.verdict == LOWER for r in mine)
    word = "fastest" if decided else "leading (not decided against every contender)"
    if leader is None:
        return f"{key}: {word}; each contender against it:"
    rate = leader.examples_per_sec.value
    figure = f" ({rate:,.0f} examples/s)" if rate is not None and rate == rate else ""
    return f"{leader.cell.model}: {word} {config(leader)}{figure}; each contender against it:"


def turns_html(ratios: Sequence[RatioRow], rows: Sequence[CellRow]) -> str:
    """The comparisons measured in turns, grouped by relation, each with its configuration."""
    esc = html.escape
    by_id = {r.cell.cell_id: r for r in rows}
    parts = []
    for relation, title in RELATION_TITLES.items():
        mine = [r for r in ratios if r.relation == relation]
        if not mine:
            continue
        items = []
        for i, r in enumerate(mine):
            subject, reference = by_id.get(r.subject), by_id.get(r.reference)
            if relation == Relation.FASTEST and (i == 0 or mine[i - 1].reference != r.reference):
                items.append(f"<li><b>{esc(_leader_text(r.reference, mine, by_id))}</b></li>")
            name = (
                f"{subject.cell.model}, {config(subject)} against {config(reference)}"
                if subject is not None and reference is not None
                else f"{r.subject} against {r.reference}"
            )
            items.append(f"<li>{esc(name)}: {esc(_ratio_text(r))}</li>")
        parts.append(f"<h3>{esc(title)}</h3><ul>{''.join(items)}</ul>")
    return "\n".join(parts)


def render_html(rows: Sequence[CellRow], ratios: Sequence[RatioRow] = ()) -> str:
    """The report's opening section: the comparisons measured in turns, then, from separately
    measured processes, per model the fastest and the tied (unless raced in turns) and each
    knob's effects on pairs not measured in turns."""
    esc = html.escape
    parts = []
    if ratios:
        parts.append(
            "<p>Measured in turns (the compared cells live at once, one timed window each in turn; "
            "CI over instances; verdicts control the false discovery rate across the run):</p>"
        )
        parts.append(turns_html(ratios, rows))
    raced = {r.reference for r in ratios if r.relation == Relation.FASTEST}
    in_turns = {(r.subject, r.reference) for r in ratios}
    separate = []
    for model in sorted({r.cell.model for r in _ok(rows)}):
        top = fastest(rows, model)
        if top is None or top[0].cell.cell_id in raced:
            continue
        best, tied = top
        separate.append(
            f"<p><b>{esc(model)}</b>: fastest {esc(config(best))} at "
            f"{best.examples_per_sec.value or math.nan:,.0f} examples/s; "
            + (
                "not told apart from it (equivalent or undecided): "
                + "; ".join(f"{esc(config(r))} ({q.value:.2f}x [{q.low:.2f}, {q.high:.2f}])" for r, q in tied)
                if tied
                else "no other configuration is tied with it"
            )
            + ".</p>"
        )
    for title, found in all_effects(rows).items():
        items = "".join(
            f"<li>{esc(f.model)}, {esc(f.context)}: {esc(f.axis)} {esc(f.changed)} against "
            f"{esc(f.reference)}: {esc(f.verdict)}</li>"
            for f in found
            if f.pair not in in_turns and f.pair[::-1] not in in_turns
        )
        if items:
            separate.append(f"<h3>{esc(title)}</h3><ul>{items}</ul>")
    if separate and ratios:
        parts.append(
            "<p>From separately measured processes (Welch's t over the two cells' process figures; "
            "pairs not measured in turns):</p>"
        )
    parts += separate
    return "\n".join(parts) or "<p>No ok rows to compare.</p>"
