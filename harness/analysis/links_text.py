"""``compare-links``' answer in words: per configuration what the faster links buy (the answer
first), the evidence table, where predict's model is right and where it is not, and ``--json``,
all from one :class:`~harness.analysis.links.LinkComparison`. Pure."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis import across
from harness.analysis.across import Versus
from harness.analysis.hardware_text import decide_words, figure_text, times, verdict_rule
from harness.analysis.links import Configuration, LinkComparison, Point
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

_SAID: dict[str, str] = {
    HIGHER: "{fast} trains {r} faster than {slow} [{low}, {high}], higher",
    LOWER: "{fast} trains at {r} the speed of {slow} [{low}, {high}], lower",
    EQUIVALENT: "{fast} trains as fast as {slow} within ±{band} ({r} [{low}, {high}]), equivalent",
    UNDECIDED: "{fast} trains at {r} the speed of {slow} [{low}, {high}], undecided: {decide}",
}
"""A faster setting against the slowest, by verdict."""


def _versus_words(p: Point, slowest: Point, min_effect: float) -> str:
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
    return text + (f"; predict said {times(p.predicted_ratio)}" if p.predicted_ratio is not None else "")


def _x(x: float) -> str:
    return times(x) if math.isfinite(x) else "no CI"


def answer(c: Configuration, min_effect: float) -> str:
    """The configuration's answer in one line: each faster setting against the slowest, and
    predict's figure (or why it has none)."""
    slowest, *faster = c.points
    if not faster:
        return f"{c.title}: measured at {slowest.setting.label} only, so nothing to compare."
    said = "; ".join(_versus_words(p, slowest, min_effect) for p in faster)
    modelled = "" if c.modelled.modelled else f"; predict: {c.modelled.note}"
    return f"{c.title}: {said}{modelled}."


_RIGHT: dict[tuple[bool, bool], str] = {
    (True, False): "{title}: predict is right within ±{band} at every link setting ({errors}).",
    (False, True): "{title}: predict is off by more than ±{band} at every link setting ({errors}): {lean}.",
    (True, True): "{title}: predict is right within ±{band} at {right} and off by more at {wrong} "
    "({errors}): {lean} there.",
}
"""Whether predict is right (within the band) somewhere, off somewhere -> the sentence."""


def right(c: Configuration, band: float) -> str:
    """Where predict's model is right and where it is not, in one sentence."""
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
    )


def method(c: LinkComparison) -> str:
    return (
        "How: a run's link is the Gbit/s its chief measured to the slowest other node at the start "
        f"(link_gbps); runs within ±25% of their median are one setting. {across.method(c.spread, 'Runs at two links')}. "
        f"{verdict_rule(c.min_effect)}. predict: the scaling model of harness.analysis.scaling over a link "
        "of the measured Gbit/s, from the 1-worker row measured on one node; its 95% interval carries "
        "that row's CI, the fitted latency's variance and the model's error on the configuration's "
        "points at the other link settings (the point's own runs left out)."
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
    "configuration",
    "link setting",
    "runs",
    "examples/s [95% CI]",
    "against the slowest [95% CI]",
    "all-reduce / step",
    "predict examples/s [95% interval]",
    "error",
)


def _ratio(v: Versus | None) -> str:
    if v is None:
        return "(the slowest)"
    r = v.ratio
    return f"{times(r.value)} [{_x(r.low)}, {_x(r.high)}] {v.verdict}"


def _seconds(p: Point) -> str:
    if p.allreduce_s is None:
        return "-"
    step = f" of {p.step_s * 1e3:.3g} ms" if p.step_s is not None else ""
    return f"{p.allreduce_s * 1e3:.3g} ms{step}"


def table_rows(c: LinkComparison) -> list[tuple[str, ...]]:
    """One row per configuration and link setting it was measured at."""
    out: list[tuple[str, ...]] = []
    for conf in c.configurations:
        for p in conf.points:
            out.append(
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
            )
    return out


def _predicted(p: Point) -> str:
    """predict's figure, its interval and whether the measured figure lies inside it."""
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
        "configurations": [_configuration(conf, c) for conf in c.configurations],
        "min_effect": c.min_effect,
        "error_band": c.error_band,
        "left_out": list(c.left_out),
        "figures": [str(p) for p in figures],
    }


def _configuration(conf: Configuration, c: LinkComparison) -> dict[str, Any]:
    return {
        "cell_id": conf.cell_id,
        "model": conf.model,
        "strategy": conf.strategy,
        "title": conf.title,
        "nodes": conf.nodes,
        "workers": conf.workers,
        "answer": answer(conf, c.min_effect),
        "right": right(conf, c.error_band),
        "predict": {
            "note": conf.modelled.note,
            "baseline_cell_id": conf.modelled.baseline_cell_id or None,
            "latency_us": conf.modelled.latency_us,
        },
        "points": [_point(p) for p in conf.points],
    }


def _point(p: Point) -> dict[str, Any]:
    e = p.estimate
    return {
        "setting": p.setting.label,
        "gbps": p.setting.gbps,
        "runs": p.side.runs,
        "examples_per_sec": e.value,
        "ci_low": e.low,
        "ci_high": e.high,
        "allreduce_s": p.allreduce_s,
        "step_s": p.step_s,
        "predicted_examples_per_sec": p.predicted,
        "predicted_low": p.interval[0],
        "predicted_high": p.interval[1],
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
