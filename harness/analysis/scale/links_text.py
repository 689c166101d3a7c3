"""``compare-links``' answer in words: per configuration what the faster links buy (the answer
first), the evidence table, where the model of the step across nodes is right and where it is
not, the answer for N nodes, and ``--json``, all from one
:class:`~harness.analysis.scale.links.LinkComparison`. Pure."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis.comparisons import across
from harness.analysis.comparisons.across import Versus
from harness.analysis.comparisons.hardware_text import decide_words, figure_text, times, verdict_rule
from harness.analysis.run.tables import render_table
from harness.analysis.scale import scale_out
from harness.analysis.scale.links import AtLink, Configuration, LinkComparison
from harness.analysis.scale.scale_out import NodesAnswer, NodesLine
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED
from harness.spec.strategies import STRATEGIES

_SAID: dict[str, str] = {
    HIGHER: "{fast} trains {r} faster than {slow} [{low}, {high}], higher",
    LOWER: "{fast} trains at {r} the speed of {slow} [{low}, {high}], lower",
    EQUIVALENT: "{fast} trains as fast as {slow} within ±{band} ({r} [{low}, {high}]), equivalent",
    UNDECIDED: "{fast} trains at {r} the speed of {slow} [{low}, {high}], undecided: {decide}",
}
"""A faster setting against the slowest, by verdict."""


def _versus_words(p: AtLink, slowest: AtLink, min_effect: float) -> str:
    v = p.versus
    assert v is not None  # a faster setting
    r = v.ratio
    text = _SAID[v.verdict].format(
        fast=p.setting.label,
        slow=slowest.setting.label,
        r=times(r.value),
        low=_x(r.low),
        high=_x(r.high),
        band=f"{min_effect:.0%}",
        decide=decide_words(v, "setting"),
    )
    return text + (f"; the model said {times(p.predicted_ratio)}" if p.predicted_ratio is not None else "")


def _x(x: float) -> str:
    return times(x) if math.isfinite(x) else "no CI"


def answer(c: Configuration, min_effect: float) -> str:
    """The configuration's answer in one line: each faster setting against the slowest, and
    the model's figure (or why it has none)."""
    slowest, *faster = c.points
    if not faster:
        return f"{c.title}: measured at {slowest.setting.label} only, so nothing to compare."
    said = "; ".join(_versus_words(p, slowest, min_effect) for p in faster)
    modelled = "" if c.modelled.modelled else f"; the model: {c.modelled.note}"
    return f"{c.title}: {said}{modelled}."


_RIGHT: dict[tuple[bool, bool], str] = {
    (True, False): "{title}: the model is right within ±{band} at every link setting ({errors}).",
    (False, True): "{title}: the model is off by more than ±{band} at every link setting ({errors}): {lean}.",
    (True, True): "{title}: the model is right within ±{band} at {right} and off by more at {wrong} "
    "({errors}): {lean} there.",
}
"""Whether the model is right (within the band) somewhere, off somewhere -> the sentence."""


def right(c: Configuration, band: float) -> str:
    """Where the model is right and where it is not, in one sentence."""
    scored = [(p, p.error) for p in c.points if p.error is not None]
    if not scored:
        return f"{c.title}: {c.modelled.note}."
    good = [p.setting.label for p, e in scored if abs(e) <= band]
    off = [(p.setting.label, e) for p, e in scored if abs(e) > band]
    mean_off = sum(e for _, e in off) / len(off) if off else 0.0
    return _RIGHT[(bool(good), bool(off))].format(
        title=c.title,
        band=f"{band:.0%}",
        errors=", ".join(f"{e:+.0%} at {p.setting.label}" for p, e in scored),
        right=", ".join(good),
        wrong=", ".join(label for label, _ in off),
        lean="it predicts faster than measured" if mean_off > 0 else "it predicts slower than measured",
    ) + "".join(_where(p) for p, e in scored if abs(e) > band)


def _where(p: AtLink) -> str:
    """Where the model misses at ``p``: the costs across the link timed apart against its term,
    and the rest of the measured step (not timed apart) against the rest it took."""
    m = p.model
    if m is None or p.crossing_s is None or p.predicted is None:
        return ""
    step = (m.step1_s + m.link_s + m.rest_s) * p.predicted / p.side.value
    rest = step - m.step1_s - p.crossing_s
    return (
        f" At {p.setting.label} the costs across the link took {p.crossing_s * 1e3:.3g} ms per update "
        f"(the model: {m.link_s * 1e3:.3g} ms) and the rest of the step, not timed apart, "
        f"{rest * 1e3:.2g} ms (the model: {m.rest_s * 1e3:.2g} ms, from the other settings)."
    )


def method(c: LinkComparison) -> str:
    return (
        "How: a run's link is the Gbit/s its chief measured to the slowest other node at the start "
        f"(link_gbps); runs within ±25% of their median are one setting. {across.method(c.spread, 'Runs at two links')}. "
        f"{verdict_rule(c.min_effect)}. The model (docs/how-to/cluster.md): the one-node 1-worker "
        "step, plus each cost across the link the step breakdown timed apart (the gradient all-reduce "
        "and the scalar reductions; a parameter server's reads and updates of the variables), fitted "
        "over every setting to a latency, a wire time at the measured link and a CPU time per byte, "
        "plus the rest of the measured step (not timed apart), taken from the configuration's runs "
        "at the other settings. Its 95% interval carries the one-node step's CI, the fit's "
        "covariance, the rest's scatter over runs and the model's error at the strategy's other "
        "settings."
    )


def text(c: LinkComparison) -> str:
    """The answer, per configuration, then how it was taken and what was left out."""
    lines = [f"What a faster link between nodes buys ({', '.join(s.label for s in c.settings)}):", ""]
    lines += [answer(conf, c.min_effect) for conf in c.configurations]
    lines += ["", method(c)]
    lines += [f"Left out: {note}." for note in c.left_out]
    return "\n".join(lines)


def right_text(c: LinkComparison) -> str:
    """Where the model is right and where it is not: one sentence per configuration."""
    return "\n".join(
        ["Where the model is right and where it is not:", *(right(x, c.error_band) for x in c.configurations)]
    )


HEADER = (
    *("configuration", "link setting", "runs", "examples/s [95% CI]", "against the slowest [95% CI]"),
    *("across the link (model) / step", "model examples/s [95% interval]", "error"),
)


def _ratio(v: Versus | None) -> str:
    if v is None:
        return "(the slowest)"
    r = v.ratio
    return f"{times(r.value)} [{_x(r.low)}, {_x(r.high)}] {v.verdict}"


def _seconds(p: AtLink) -> str:
    if p.crossing_s is None:
        return "-"
    step = f" of {p.step_s * 1e3:.3g} ms" if p.step_s is not None else ""
    model = f" (model {p.model.link_s * 1e3:.3g})" if p.model is not None else ""
    return f"{p.crossing_s * 1e3:.3g} ms{model}{step}"


def table_rows(c: LinkComparison) -> list[tuple[str, ...]]:
    """One row per configuration and link setting it was measured at."""
    return [
        (
            conf.title,
            p.setting.label,
            str(p.side.runs),
            figure_text(p.estimate),
            _ratio(p.versus),
            _seconds(p),
            _predicted(p) if p.predicted is not None else conf.modelled.short,
            f"{p.error:+.0%}" if p.error is not None else "-",
        )
        for conf in c.configurations
        for p in conf.points
    ]


def _predicted(p: AtLink) -> str:
    """The model's figure, its interval and whether the measured figure lies inside it."""
    low, high = p.interval
    where = {True: " inside", False: " outside", None: ""}[p.inside]
    return f"{p.predicted:,.0f}" + ("" if math.isnan(low + high) else f" [{low:,.0f}, {high:,.0f}]{where}")


def to_json(c: LinkComparison, figures: Sequence[Path] = ()) -> dict[str, Any]:
    """The same answer for scripts (NaN printed as null by :func:`harness.contract.outputs.dumps`)."""
    return {
        "settings": [
            {"label": s.label, "gbps": s.gbps, "runs": list(s.run_ids), "links": list(s.links)}
            for s in c.settings
        ],
        "configurations": [
            {
                "cell_id": conf.cell_id,
                "model": conf.model,
                "strategy": conf.strategy,
                "title": conf.title,
                "nodes": conf.nodes,
                "workers": conf.workers,
                "answer": answer(conf, c.min_effect),
                "right": right(conf, c.error_band),
                "prediction": {"note": conf.modelled.note},
                "nodes_answer": [dataclasses.asdict(a) for a in conf.answers],
                "points": [_point(p) for p in conf.points],
            }
            for conf in c.configurations
        ],
        "min_effect": c.min_effect,
        "error_band": c.error_band,
        "left_out": list(c.left_out),
        "figures": [str(p) for p in figures],
    }


def _point(p: AtLink) -> dict[str, Any]:
    e = p.estimate
    return {
        "setting": p.setting.label,
        "gbps": p.setting.gbps,
        "runs": p.side.runs,
        "examples_per_sec": e.value,
        "ci_low": e.low,
        "ci_high": e.high,
        "crossing_s": p.crossing_s,
        "step_s": p.step_s,
        "predicted_examples_per_sec": p.predicted,
        "predicted_low": p.interval[0],
        "predicted_high": p.interval[1],
        "predicted_crossing_s": None if p.model is None else p.model.link_s,
        "predicted_rest_s": None if p.model is None else p.model.rest_s,
        "inside": p.inside,
        "error": p.error,
        "against_slowest": None
        if p.versus is None
        else {
            **{k: v for k, v in dataclasses.asdict(p.versus.ratio).items() if k in ("value", "low", "high")},
            "verdict": p.versus.verdict,
            "basis": p.versus.basis,
            "runs_to_decide": p.versus.runs_to_decide,
            "predicted": p.predicted_ratio,
        },
    }


def nodes_text(c: LinkComparison) -> str:
    """The answer for N nodes: per link asked, a table (a row per node count, a column per
    configuration modelled), then per configuration where the link bounds the step and the
    slowest link at which a second node pays."""
    confs = [x for x in c.configurations if x.answers]
    if not confs:
        return "The answer for N nodes: no configuration is modelled (see the model column above)."
    out = []
    for i, first in enumerate(confs[0].answers):
        header = ("nodes", *(_strategy(x) for x in confs))
        rows = [
            (str(line.nodes), *(_nodes_cell(x.answers[i].lines[j]) for x in confs))
            for j, line in enumerate(first.lines)
        ]
        title = (
            f"The answer for N nodes at {first.gbps:.3g} Gbit/s: examples/s [95% interval], "
            "efficiency (* measured at this link; the rest extrapolated)"
        )
        out += [render_table(header, rows, title=title), ""]
        out += [_nodes_words(x, x.answers[i]) for x in confs] + [""]
    return "\n".join(out).rstrip()


def _nodes_cell(line: NodesLine) -> str:
    p = line.predicted
    mark = "*" if line.measured else ""
    return f"{p.value:,.0f}{mark} [{p.low:,.0f}, {p.high:,.0f}], {line.efficiency[0]:.2f}"


def _nodes_words(conf: Configuration, a: NodesAnswer) -> str:
    nodes = f"{a.lines[0].nodes} to {a.lines[-1].nodes}"
    bound = f"from {a.link_bound_from} nodes on" if a.link_bound_from else f"at none of {nodes} nodes"
    pays = f"2 nodes beat one node's best ({a.best_label}, {a.best_examples_per_sec:,.0f} examples/s) " + (
        f"from {a.paying_gbps:g} Gbit/s on" if a.paying_gbps else "at no link up to 1,000 Gbit/s"
    )
    fewest = f"{a.fewest} nodes are the fewest that do" if a.fewest else "none of these counts does"
    measured = [str(x.nodes) for x in a.lines if x.measured]
    said = f"measured at this link: {', '.join(measured)} nodes" if measured else "none measured at this link"
    ps = (
        " The parameter server is validated on 2 nodes only (1 worker, the measured runs): with more "
        "workers their pace and the server's link are extrapolated, and the server's CPU is not "
        "modelled."
        if scale_out.ACROSS[conf.strategy].served
        else " Past the measured counts the ring and the workers' wait (held at its 2-node value) are extrapolated."
    )
    head = f"{_strategy(conf)} at {a.gbps:.3g} Gbit/s: the link bounds the step {bound}"
    return f"{head}; {pays}; at this link {fewest}; {said}.{ps}"


def _strategy(conf: Configuration) -> str:
    """``dense, MultiWorkerMirroredStrategy``: the answer for N nodes varies the rest."""
    return f"{conf.model}, {STRATEGIES[conf.strategy].words}"
