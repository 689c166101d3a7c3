"""A configuration in words and as a command line, from the axes' own words (:class:`Axis`'s
``say``, ``reference``): what a person reads, where ids and shorthand belong in files. Pure.

A configuration here is a mapping of axis name to value (:func:`harness.analysis.run.answer.values`
for a stored row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.spec.axes import AXES, AXIS_BY_NAME, SENTENCE_AXES, Axis, AxisValue
from harness.spec.strategies import STRATEGIES

Values = Mapping[str, AxisValue]
"""A configuration: axis name -> value."""

NAMED = tuple(n for n in SENTENCE_AXES if AXIS_BY_NAME[n].always_named)
"""The axes every label says where they apply (:attr:`Axis.always_named`)."""


def applies(axis: Axis, values: Values) -> bool:
    """Whether ``axis`` means something for the configuration's strategy (and is not collapsed or
    unknown: a row stored before the axis existed)."""
    if values.get(axis.name) is None:
        return False
    if axis.applies_to and values.get("strategy") not in axis.applies_to:
        return False
    return values[axis.name] != "none" or axis.inapplicable != "none"


def _device_axis(values: Values) -> str | None:
    strategy = STRATEGIES.get(str(values.get("strategy")))
    return strategy.device_axis if strategy is not None else None


def said(axis: Axis, values: Values, always: bool) -> bool:
    """Whether a description says ``axis``: it applies, and it is the axis that adds the
    strategy's devices, or its value is not the axis's reference, or ``always`` and the axis is
    :attr:`~Axis.essential`."""
    if not applies(axis, values):
        return False
    if axis.name == _device_axis(values) or axis.reference is None:
        return True
    return values[axis.name] != axis.reference or (always and axis.essential)


def describe(values: Values, only: Sequence[str] | None = None, always: bool = False) -> str:
    """The configuration in words, axes in :data:`SENTENCE_AXES` order: ``only`` those named (all
    when None), each as :func:`said` decides; the strategy and its devices as one phrase
    ("MirroredStrategy on 2 replicas")."""
    names = [
        n for n in SENTENCE_AXES if (only is None or n in only) and said(AXIS_BY_NAME[n], values, always)
    ]
    parts = [AXIS_BY_NAME[n].say(values[n]) for n in names]
    if len(names) > 1 and names[0] == "strategy" and names[1] == _device_axis(values):
        parts[:2] = [f"{parts[0]} {parts[1]}"]
    return ", ".join(p for p in parts if p)


def varying(configs: Sequence[Values]) -> list[str]:
    """The axes (in :data:`SENTENCE_AXES` order) whose value differs between ``configs``."""
    return [n for n in SENTENCE_AXES if len({c.get(n) for c in configs}) > 1]


def labels(configs: Sequence[Values]) -> list[str]:
    """One label per configuration, unique among them: the strategy with its devices, its co-tenants,
    and each axis that differs between them, in words (a reference value left out). Two configurations equal on
    every axis get the same label."""
    named = [*NAMED, *varying(configs)]
    return [describe(c, only=named) for c in configs]


def common(configs: Sequence[Values]) -> str:
    """What the configurations share, in words (model and strategy left out; essential axes said
    at their reference too)."""
    same = [n for n in SENTENCE_AXES if n != "strategy" and n not in varying(configs)]
    return describe(configs[0], only=same, always=True) if configs else ""


def flags(values: Values, vary: tuple[str, Sequence[AxisValue]] | None = None) -> str:
    """``python -m harness run`` arguments that select the configuration, ``vary``'s axis set to its
    values instead: model and strategy always, every other applicable axis where it is not the
    command line's default."""
    out = []
    for axis in AXES:
        if axis.name not in values or not applies(axis, values):
            continue
        value: object = values[axis.name]
        if vary is not None and axis.name == vary[0]:
            value = ",".join(str(v) for v in vary[1])
        elif axis.name not in ("model", "strategy") and value == axis.default:
            continue
        out.append(f"{axis.flag} {value}")
    return " ".join(out)
