"""The answer a run gives, per model, in sentences a TensorFlow user reads without the docs: what to
train with here, how much faster it is than the plain custom loop and than each alternative, which
alternatives are as fast and which are not decided yet (with what would decide them), what bounds
the leader and its closest rival, and the knob to try next with its command. Pure (rows in,
:class:`Answer` and text out). Every number printed is a value of the run's tables (relation
``fastest`` in the ratios table; a cell's own figure with its CI), at most re-expressed: a ratio r
as a change of |r - 1| x 100 %, the leader's gain over a contender as 1 / r, seconds as minutes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.run import render
from harness.analysis.run.numerics import numerics_line
from harness.contract.machine import MachineFacts
from harness.contract.records import Axes, Breakdown, CellRow, RatioRow
from harness.formulas import breakdown
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, NOT_MEASURED, UNDECIDED
from harness.spec import words
from harness.spec.axes import AXES, AXIS_BY_NAME, AxisValue
from harness.spec.groups import Relation
from harness.spec.protocol import bf16_reason
from harness.spec.strategies import STRATEGIES


def values(cell: Axes) -> dict[str, AxisValue]:
    """A stored row's configuration: axis name -> value (:mod:`harness.spec.words`); an axis the
    row holds no value of (a figure's partial row) is left out."""
    return {a.name: v for a in AXES if (v := getattr(cell, a.row_column, None)) is not None}


@dataclass(frozen=True)
class Contender:
    """One contender against the model's leader: its row, its label in words and the ratio row
    (contender / leader throughput, measured in turns)."""

    row: CellRow
    label: str
    ratio: RatioRow

    @property
    def verdict(self) -> str:
        return self.ratio.verdict if self.ratio.ratio.value is not None else NOT_MEASURED


@dataclass(frozen=True)
class Answer:
    """A model's answer: its leader (a cell row) and every contender against it."""

    title: str
    """The model in words."""
    leader: CellRow
    label: str
    """The leader's label among the contenders (unique among them)."""
    setup: str
    """The leader's choices in words (every axis that differs between the contenders, said)."""
    shared: str
    """What every contender shares, in words."""
    versus: tuple[Contender, ...]
    """Each contender against the leader, closest first, not measured last."""
    plain: Contender | None
    """The plain custom loop (no strategy, nothing else changed) where it is not the leader."""

    @property
    def model(self) -> str:
        return self.leader.cell.model

    @property
    def rival(self) -> Contender | None:
        """The closest measured contender."""
        return next((v for v in self.versus if v.verdict != NOT_MEASURED), None)

    @property
    def instances(self) -> int:
        """Group instances (sets of fresh processes) behind the ratios: the most of any."""
        return max((v.ratio.instances or 0 for v in self.versus), default=0)

    def having(self, verdict: str) -> list[Contender]:
        return [v for v in self.versus if v.verdict == verdict]

    @property
    def fastest(self) -> bool:
        """Every contender decided slower or as fast (none undecided, none faster)."""
        return bool(self.versus) and all(v.verdict in (LOWER, EQUIVALENT) for v in self.versus)


def row_labels(rows: Sequence[CellRow]) -> list[str]:
    """Each row's configuration in words, in order, unique among the rows of its model that
    differ: the strategy and every axis that differs between them
    (:func:`harness.spec.words.labels`), and the nodes where a cluster spanned several. The one
    naming of cells in everything a person reads."""
    out = [""] * len(rows)
    for model in dict.fromkeys(r.cell.model for r in rows):
        mine = [i for i, r in enumerate(rows) if r.cell.model == model]
        for i, label in zip(mine, words.labels([values(rows[i].cell) for i in mine]), strict=True):
            nodes = rows[i].ran.nodes or 1
            out[i] = label + (f" on {nodes} nodes" if nodes > 1 else "")
    return out


def labels(rows: Sequence[CellRow]) -> dict[str, str]:
    """:func:`row_labels` by cell id."""
    return dict(zip((r.cell.cell_id for r in rows), row_labels(rows), strict=True))


def answers(rows: Sequence[CellRow], ratios: Sequence[RatioRow]) -> list[Answer]:
    """One :class:`Answer` per model whose contenders were raced in turns (the leader most of its
    ``fastest`` ratios name, where a run raced twice), in the order the ratios name them; labels
    from :func:`labels` over ``rows``."""
    by_id = {r.cell.cell_id: r for r in rows}
    named = labels(rows)
    raced = [
        r for r in ratios if r.relation == Relation.FASTEST and r.reference in by_id and r.subject in by_id
    ]
    out = []
    for model in dict.fromkeys(by_id[r.reference].cell.model for r in raced):
        mine = [r for r in raced if by_id[r.reference].cell.model == model]
        lead = Counter(r.reference for r in mine).most_common(1)[0][0]
        pairs = [(by_id[r.subject], r) for r in mine if r.reference == lead]
        out.append(_answer(by_id[lead], pairs, named))
    return out


def _answer(leader: CellRow, raced: Sequence[tuple[CellRow, RatioRow]], named: dict[str, str]) -> Answer:
    configs = [values(leader.cell), *(values(row.cell) for row, _ in raced)]
    versus = tuple(
        sorted(
            (Contender(row, named[row.cell.cell_id], r) for row, r in raced),
            key=lambda v: -(v.ratio.ratio.value if v.ratio.ratio.value is not None else -1.0),
        )
    )
    return Answer(
        title=AXIS_BY_NAME["model"].say(leader.cell.model),
        leader=leader,
        label=named[leader.cell.cell_id],
        setup=words.describe(configs[0], always=True),
        shared=words.common(configs),
        versus=versus,
        plain=None
        if _plain(configs[0], configs)
        else next((v for v in versus if _plain(values(v.row.cell), configs)), None),
    )


def _plain(config: words.Values, configs: Sequence[words.Values]) -> bool:
    """Whether ``config`` is the plain custom loop among ``configs``: the reference strategy, and
    every other axis that varies between them at its reference value."""
    if not STRATEGIES[str(config["strategy"])].reference:
        return False
    varied = [n for n in words.varying(configs) if n != "strategy"]
    return not any(words.said(AXIS_BY_NAME[n], config, always=False) for n in varied)


def pct(fraction: float) -> str:
    """A fraction as a percentage: one decimal under 10 %, none from there (``0.081`` -> ``8.1%``)."""
    p = abs(fraction) * 100
    return f"{p:.1f}%" if round(p, 1) < 10 else f"{p:.0f}%"


def _side(r: float) -> str:
    return f"{pct(r - 1)} {'slower' if r < 1 else 'faster'}"


def change(value: float, low: float | None, high: float | None, than: str = "") -> str:
    """A throughput ratio in words, with its CI: ``8.1% slower (between 5.9% and 10%)``; a CI
    that straddles 1: ``1.0% faster (between 3.8% slower and 6.1% faster)``; ``than``, where
    given, follows the change (``15% faster than X (between ...)``)."""
    main = _side(value) + (f" than {than}" if than else "")
    if low is None or high is None:
        return f"{main} (no CI: fewer than 2 instances)"
    if high < 1 or low > 1:
        near, far = (high, low) if high < 1 else (low, high)
        return f"{main} (between {pct(near - 1)} and {pct(far - 1)})"
    return f"{main} (between {_side(low)} and {_side(high)})"


def gain(v: Contender, than: str = "") -> str:
    """The leader against contender ``v`` (1 / its ratio) in words: ``15% faster (between 11% and 20%)``."""
    r = v.ratio.ratio
    assert r.value is not None
    inverse = (None if r.high is None else 1 / r.high, None if r.low is None else 1 / r.low)
    return change(1 / r.value, *inverse, than=than)


def _against(v: Contender, plain: bool) -> str:
    r = v.ratio
    label = v.label + (" (the plain custom loop)" if plain else "")
    if r.ratio.value is None:
        return f"{label}: {r.note or 'not measured'}"
    text = f"{label}: {change(r.ratio.value, r.ratio.low, r.ratio.high)}"
    if v.verdict == UNDECIDED:
        text += "; " + _decide(r)
    return text


def _decide(r: RatioRow) -> str:
    """What would likely decide an undecided ratio."""
    if r.extra_instances is None:
        return "too few instances to tell how many more would decide it"
    if r.extra_instances == 0:
        return "a difference on its own, held back by the control of false discoveries across the run"
    minutes = f" (~{r.extra_s / 60:.1f} min more budget)" if r.extra_s is not None else ""
    many = "instance" if r.extra_instances == 1 else "instances"
    return f"about {r.extra_instances} more {many}{minutes} would likely decide it"


@dataclass(frozen=True)
class Para:
    """One sentence of an answer and the items listed under it."""

    text: str
    items: tuple[str, ...] = ()


def paragraphs(a: Answer) -> list[Para]:
    """The answer for one model, sentence by sentence (the terminal and the report both print these)."""
    out = [Para(f"{a.title[:1].upper()}{a.title[1:]}: {_headline(a)}"), _gains(a)]
    groups = (
        (LOWER, "Slower than it:"),
        (EQUIVALENT, "As fast as it (no difference of 5% or more either way):"),
        (HIGHER, "Faster than it:"),
        (UNDECIDED, "Not decided yet:"),
        (NOT_MEASURED, "Not measured:"),
    )
    for verdict, title in groups:
        found = a.having(verdict)
        if found:
            out.append(Para(title, tuple(_against(v, v is a.plain) for v in found)))
    raced = [a.leader, *(v.row for v in a.versus)]
    line = numerics_line(raced, [values(r.cell) for r in raced])
    bound = breakdown.BOUND_BY_NAME.get(_verdict(a.leader)[0] or "")
    step = None if bound is None else next_step(bound, values(a.leader.cell))
    out += [*_precision(a), *([Para(line)] if line else []), _why(a), *([] if step is None else [step])]
    if a.shared:
        out.append(Para(f"All {len(a.versus) + 1} compared with {a.shared}."))
    return out


def _headline(a: Answer) -> str:
    n = len(a.versus)
    undecided = len(a.having(UNDECIDED)) + len(a.having(NOT_MEASURED)) + len(a.having(HIGHER))
    if len(a.having(NOT_MEASURED)) == n:
        return f"no configuration was measured against {a.setup} in turns, so none is named fastest."
    if a.fastest and not a.having(EQUIVALENT):
        state = f"fastest of the {n + 1} configurations compared"
    elif a.fastest:
        state = f"fastest of the {n + 1} configurations compared, with {len(a.having(EQUIVALENT))} as fast"
    else:
        state = f"leading, not yet decided against {undecided} of the other {n}"
    return f"train with {a.setup} ({state})."


def _gains(a: Answer) -> Para:
    fig = a.leader.examples_per_sec
    rate = f"{fig.value:,.0f} examples/s" if fig.value is not None else "no figure"
    ci = (
        f" (95% CI {fig.low:,.0f} to {fig.high:,.0f})" if fig.low is not None and fig.high is not None else ""
    )
    procs = a.leader.spread.processes
    where = f"{rate}{ci}, over {procs} process{'es' if procs != 1 else ''}" if procs else f"{rate}{ci}"
    if a.plain is None:
        start = "It is the plain custom loop itself"
    elif a.plain.ratio.ratio.value is None:
        start = "Against the plain custom loop: not measured"
    else:
        start = f"It is {gain(a.plain, 'the plain custom loop')}"
    return Para(
        f"{start}; it trains at {where}. Each ratio below is measured in turns over up to "
        f"{a.instances} instances (sets of fresh processes), with its 95% CI."
    )


def _verdict(row: CellRow) -> tuple[str | None, str | None]:
    """The row's bound and where its update time goes, without the advice: recomputed from its
    parts where a verdict was stored (a row stored under an older rule reads as the current rule
    says: :func:`harness.formulas.breakdown.verdict`), else as stored (why it has none); reason
    None where it was not timed."""
    b, m = row.breakdown, breakdown.measured(row.breakdown)
    bound, reason = (
        breakdown.verdict(m.step_s, m.parts, m.bounds) if b.bound and m else (b.bound, b.bound_reason)
    )
    return bound, reason.split("; try ")[0] if reason else None


def _ps_costs(b: Breakdown) -> str | None:
    """A parameter-server row's costs across the link, timed apart (ms per update), or None."""
    if b.ps_read_s is None or b.ps_update_s is None:
        return None
    return (
        f"no parts of its own (the coordinator schedules whole steps); timed apart, a worker reads "
        f"every variable from the ps in {b.ps_read_s * 1e3:.3g} ms and updates them in "
        f"{b.ps_update_s * 1e3:.3g} ms per update"
    )


def _why(a: Answer) -> Para:
    said = [("the leader", a.label, a.leader)]
    if a.rival:
        said.append(("its closest rival", a.rival.label, a.rival.row))
    unmeasured = "where its update's time goes was not measured in this run"
    items = tuple(
        f"{name}, {label}: {_verdict(row)[1] or _ps_costs(row.breakdown) or unmeasured}"
        for name, label, row in said
    )
    return Para("Why: where an update's time goes, each part as a share of the update:", items)


def next_step(bound: breakdown.Bound, config: words.Values) -> Para | None:
    """The knob to try next for a leader of ``config`` bound by ``bound``, with the ``run`` command
    that races it against the leader's value (its first try axis that suggests a value), or None."""
    for name in bound.tries:
        axis = AXIS_BY_NAME[name]
        pair = axis.next_values(config[name]) if name in config else None
        if pair is not None:
            command = f"python -m harness run {words.flags(config, vary=(name, pair))}"
            sentence = f"Next: the leader is {bound.name}-bound, so try {axis.say(pair[1])} against {axis.say(pair[0])}:"
            return Para(sentence, (command,))
    return None


def _precision(a: Answer) -> list[Para]:
    """On a CPU, why mixed bfloat16 was raced or not (its facts' bfloat16 units); nothing on a GPU
    or for a run that recorded no CPU flags (:attr:`MachineFacts.partial`)."""
    facts = MachineFacts.from_json(a.leader.run.machine_facts or '{"partial": true}')
    if facts.partial or (a.leader.machine is not None and a.leader.machine.device_kind == "GPU"):
        return []
    raced = any(r.cell.precision == "mixed_bfloat16" for r in (a.leader, *(v.row for v in a.versus)))
    return [Para(f"Precision: {bf16_reason(facts.bf16_units, raced)}.")]


def logical_kind(rows: Sequence[CellRow]) -> str | None:
    """Where the rows' replicas on logical devices are: ``GPU`` (logical GPUs carved from one
    GPU), ``CPU`` (logical CPU devices, or any row not known to be on a GPU), None when no row has
    any."""
    logical = [r for r in rows if r.ran.logical_devices]
    if not logical:
        return None
    on_gpus = all(r.machine is not None and r.machine.device_kind == "GPU" for r in logical)
    return "GPU" if on_gpus else "CPU"


def cpu_note(rows: Sequence[CellRow]) -> str:
    """The sentence that must come before any scaling figure where the rows have replicas on
    logical devices: sharing one CPU, or logical GPUs sharing one GPU ("" otherwise)."""
    kind = logical_kind(rows)
    if kind is None:
        return ""
    if kind == "GPU":
        return (
            "On this GPU host, replicas beyond its GPUs are logical GPUs sharing one GPU's compute: "
            "they probe what the all-reduce and cross-device ops cost, not what a second GPU would "
            "buy, and are never among the configurations raced for the fastest."
        )
    return (
        "On this CPU, replicas are logical devices and workers are local processes, all sharing the "
        "same cores: a second replica adds no compute, so these answers say what distribution costs "
        "here, not what a second GPU or machine would buy."
    )


NO_ANSWER = (
    "This run measured no two configurations of one model in turns (one configuration each, or "
    "the race failed), so it names no fastest: its figures follow, each with its CI."
)


def text(found: Sequence[Answer], rows: Sequence[CellRow]) -> str:
    """The answers as the terminal prints them."""
    if not found:
        return NO_ANSWER
    lines = ["What to train with here:"]
    note = cpu_note(rows)
    if note:
        lines.append(note)
    for a in found:
        lines.append("")
        for p in paragraphs(a):
            lines.append(p.text)
            lines += [f"  - {item}" for item in p.items]
    return "\n".join(lines)


def render_html(found: Sequence[Answer], rows: Sequence[CellRow]) -> str:
    """The answers as the report's first section."""
    return render.page(
        "answer.html", answers=[paragraphs(a) for a in found], note=cpu_note(rows), no_answer=NO_ANSWER
    ).rstrip("\n")
