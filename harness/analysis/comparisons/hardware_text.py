"""``compare-hardware``'s answer in words: the terminal's text, the page (a Jinja2 template, the
report's stylesheet) and ``--json``, all from one :class:`HardwareComparison`. Pure."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from harness.analysis.comparisons import across
from harness.analysis.comparisons.across import Versus
from harness.analysis.comparisons.hardware import Cost, Figure, HardwareComparison, ModelAnswer, NoBf16, Row
from harness.analysis.comparisons.machines import MachineRuns, peak_words
from harness.analysis.run import render
from harness.contract.columns import Estimate
from harness.formulas import across_runs
from harness.formulas.across_runs import MAX_RUNS
from harness.formulas.verdicts import HIGHER, UNDECIDED
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.sweeps import DEFAULT

PRECISION = AXIS_BY_NAME["precision"]


def times(r: float) -> str:
    """A ratio as ``2.17x``, ``0.55x``, ``12.4x``."""
    return f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


def ratio_words(v: Versus, each: str = "machine") -> str:
    """``2.2x (between 1.4x and 3.3x): higher``; an undecided one says what would decide it, runs
    on ``each`` side."""
    r = v.ratio
    if not all(math.isfinite(x) for x in (r.value, r.low, r.high)):
        return f"{times(r.value)} (no CI): {v.verdict}" if math.isfinite(r.value) else "not measured"
    said = f"{times(r.value)} (between {times(r.low)} and {times(r.high)}): {v.verdict}"
    return said + (f" ({decide_words(v, each)})" if v.verdict == UNDECIDED and v.runs_to_decide != 0 else "")


def decide_words(v: Versus, each: str) -> str:
    """What would decide an undecided ratio, in runs of each side (a machine's: the default
    sweep's, with its minutes)."""
    if v.runs_to_decide is None:
        return f"a difference this small is below what {MAX_RUNS} runs on each {each} can tell apart"
    how = f" (`nox -s bench`, {DEFAULT.protocol.budget_min:g} minutes each)" if each == "machine" else ""
    return f"about {v.runs_to_decide} runs on each {each}{how} would likely decide it"


def usd(x: float | None) -> str:
    """Dollars with three significant digits and no exponent: ``$0.0000113``, ``$12.3``, ``$1,234``."""
    if x is None:
        return "-"
    if x >= 1000:
        return f"${x:,.0f}"
    decimals = max(0, 2 - math.floor(math.log10(x))) if x > 0 else 2
    return f"${x:.{decimals}f}"


def estimate_words(e: Estimate, unit: str = "examples/s") -> str:
    ci = f" (95% CI {e.low:,.0f} to {e.high:,.0f})" if e.low is not None and e.high is not None else ""
    return f"{e.value:,.0f} {unit}{ci}" if e.value is not None else "no figure"


def cost_words(c: Cost, epoch_examples: int) -> str:
    m = c.per_million
    text = f"{usd(m.value)} per million examples (between {usd(m.low)} and {usd(m.high)})"
    if c.per_epoch is not None:
        text += f", {usd(c.per_epoch.value)} per epoch of its {epoch_examples:,} examples"
    return text + f" at ${c.usd_per_hour:,.2f}/hour"


def energy_words(f: Figure) -> str:
    if f.energy_j_per_example is None:
        return "energy per example: not measurable here (no NVML GPU counter or readable RAPL counter)"
    return f"energy per example: {f.energy_j_per_example:.3g} J"


def _q(name: str) -> str:
    return f"'{name}'"


def headline(a: ModelAnswer) -> str:
    """Which machine trains the model fastest, and by how much, as far as the CIs say."""
    title = f"{a.title[:1].upper()}{a.title[1:]}"
    if len(a.best) < 2:
        return f"{title}: fewer than two machines raced it in turns, so no machine is named fastest."
    decided = [v for v in a.leads if v.verdict == HIGHER]
    if len(a.leads) == 1:
        v = a.leads[0]
        if v.verdict == HIGHER:
            r = v.ratio
            return (
                f"{title}: {_q(a.leader)} trains it fastest, at {times(r.value)} the speed of "
                f"{_q(v.group)} (between {times(r.low)} and {times(r.high)}), each at its best."
            )
        return (
            f"{title}: no machine is decided fastest; {_q(a.leader)} against {_q(v.group)}, each "
            f"at its best: {ratio_words(v)}."
        )
    state = "fastest" if len(decided) == len(a.leads) else "leading, not decided against every other machine"
    return f"{title}: {_q(a.leader)} trains it {state}, each machine at its best:"


def paragraph(a: ModelAnswer) -> list[str]:
    """The model's answer: the headline, each machine's own best with cost and energy, the same
    configuration on every machine."""
    lines = [headline(a)]
    if len(a.leads) > 1:
        lines += [f"  - against {_q(v.group)}: {ratio_words(v)}" for v in a.leads]
    for name, f in a.best.items():
        precision = PRECISION.say(f.cell.precision)
        label = f.label if precision in f.label else f"{f.label}, in {precision}"
        parts = [f"{label}, {estimate_words(f.estimate)}"]
        if name in a.costs:
            parts.append(cost_words(a.costs[name], a.epoch_examples))
        parts.append(energy_words(f))
        lines.append(f"  - on {_q(name)}, its fastest configuration: " + "; ".join(parts))
    for name in a.unraced:
        lines.append(f"  - on {_q(name)}: no configurations raced in turns, so it names no fastest")
    lines += [f"  - {no_bf16_words(n)}" for n in a.no_bf16]
    if a.same_label:
        what = "the plain custom loop" if a.same_plain else "the same configuration"
        lines.append(f"  On {what} ({a.same_label}), every machine against the reference:")
        lines += [f"  - {_q(v.group)}: {ratio_words(v)}" for v in a.same]
    return lines


def no_bf16_words(n: NoBf16) -> str:
    """Why a machine's best may be higher than shown: its runs never trained in mixed bfloat16."""
    trained = f"its runs trained it in {' and '.join(PRECISION.say(p) for p in n.trained)} only"
    if n.units:
        why = f"its CPU has bfloat16 units ({', '.join(n.units)}) but {trained}"
    else:
        why = f"{trained} and are from before the suite recorded its machine facts: its CPU may have bfloat16 units"
    where = "" if n.units else " where the CPU has them"
    run = f"`python -m harness run --sweep default` on it races mixed bfloat16{where}"
    return f"on {_q(n.machine)}, its best may be higher than shown: {why} ({run})"


def facts_words(m: MachineRuns) -> str:
    """The machine's facts in one line (:attr:`MachineFacts.words`), or why there are none."""
    return (
        "facts not recorded (a run from before the suite recorded its machine facts)"
        if m.facts.partial
        else m.facts.words
    )


def machine_lines(c: HardwareComparison) -> list[str]:
    lines = ["The machines:"]
    for m in c.machines:
        runs = ", ".join(r.run_id for r in m.runs)
        ref = " (the reference)" if m.name == c.baseline else ""
        peaks = " and ".join(f"in {p.dtype} {peak_words(p.flops)}" for p in m.peaks) or "not measured"
        lines.append(f"  - {_q(m.name)}{ref}: {facts_words(m)}; peak {peaks}; runs {runs}")
    whys = list(dict.fromkeys(m.why for m in c.machines if m.why))
    lines += [f"  Told apart: {w}." for w in whys]
    lines.append(f"  {instance_words(c)}")
    dtype = f" in {c.peak_dtype}" if c.peak_dtype else ""
    lines += [f"  Peak{dtype} of {_q(v.group)} against the reference's: {ratio_words(v)}" for v in c.peaks]
    return lines


def instance_words(c: HardwareComparison) -> str:
    """Whether the CIs carry an instance-to-instance spread, or compare these instances only."""
    inst = c.spread.part(across_runs.INSTANCE)
    if inst.df:
        return (
            f"Instances: the CIs carry an instance-to-instance spread of {inst.variance**0.5:.1%} "
            f"({inst.df:g} degrees of freedom, from the machines measured on two or more instances)."
        )
    return (
        "Instances: no instance-to-instance spread has been measured (no machine here ran on two host "
        "instances), so this compares these instances, not their machine types. On a second instance "
        "of each, `python -m harness run --sweep default --machine NAME` (13 minutes on 2 cores) "
        "would measure it."
    )


def method(c: HardwareComparison) -> str:
    return (
        f"How: {across.method(c.spread, 'Machines')}. {verdict_rule(c.min_effect)}. Prices are per "
        "instance-hour, in US dollars."
    )


def verdict_rule(min_effect: float) -> str:
    """The rule :func:`harness.formulas.verdicts.judge` applies, in words, with its band's edges
    1 / (1 + min_effect) and 1 + min_effect."""
    low, high = 1 / (1 + min_effect), 1 + min_effect
    return (
        f"A ratio is higher or lower when its CI excludes 1 and the ratio is {high:.3f} or more or "
        f"{low:.3f} or less (a difference of {min_effect:.0%} either way), equivalent when its CI lies "
        f"inside [{low:.3f}, {high:.3f}], else undecided"
    )


def text(c: HardwareComparison) -> str:
    """The terminal's answer: per model first, then the machines and the method (the evidence
    table, :func:`evidence_rows`, is printed after it)."""
    lines = [
        f"Which machine trains each model fastest ({len(c.machines)} machines; the reference is {_q(c.baseline)}):"
    ]
    for a in c.models:
        lines += ["", *paragraph(a)]
    lines += ["", *machine_lines(c), "", method(c)]
    return "\n".join(lines)


EVIDENCE_HEADER = (
    *("model", "configuration", "machine", "examples/s [95% CI]", "reference's examples/s [95% CI]"),
    *("against the reference [95% CI]", "runs"),
)


def figure_text(e: Estimate) -> str:
    """A figure with its CI: ``12,345 [11,000, 13,500]`` (examples/s), or ``-``."""
    return f"{e.value:,.0f} [{e.low:,.0f}, {e.high:,.0f}]" if e.value and e.low and e.high else "-"


def evidence_rows(c: HardwareComparison) -> list[tuple[str, ...]]:
    """One row per configuration and machine other than the reference that both measured."""
    ref = {r.cell_id: r.figure for r in c.rows if r.versus is None}
    return [_evidence(r, r.versus, ref[r.cell_id]) for r in c.rows if r.versus is not None]


def _evidence(r: Row, versus: Versus, base: Figure) -> tuple[str, ...]:
    f = r.figure
    figures = (figure_text(f.estimate), figure_text(base.estimate), ratio_words(versus))
    return (r.model, r.label, f.machine, *figures, versus.basis)


def to_json(c: HardwareComparison) -> dict[str, Any]:
    """The same answer for scripts: every field of the comparison (``--json`` prints it with
    :func:`harness.contract.outputs.dumps`, which writes NaN as null)."""
    data = dataclasses.asdict(c)
    data["verdicts_from"] = {"min_effect": c.min_effect, "equivalent_within": c.min_effect}
    data["leaders"] = {a.model: a.leader for a in c.models if len(a.best) >= 2}
    return data


def render_html(c: HardwareComparison, figures: Sequence[str] = ()) -> str:
    """The page: the same answer, the picture, the machines and the evidence table."""
    return render.page(
        "hardware.html",
        title=f"Which machine trains fastest: {', '.join(m.name for m in c.machines)}",
        models=[paragraph(a) for a in c.models],
        machines=machine_lines(c)[1:],
        method=method(c),
        header=EVIDENCE_HEADER,
        rows=evidence_rows(c),
        figures=list(figures),
    )
