"""Older results read as today's: the rows of a table file of an older layout brought to today's
records as they are read (:func:`upgrade`, which :mod:`harness.results.store` applies to every file
of layout 0), each missing or stale column filled with what it meant when the row was written, so
that no reader checks for one. What a reader cannot know stays one typed marker
(:attr:`harness.contract.machine.MachineFacts.partial`). Three versions say what a stored thing is:

- a pack's ``format_version`` (``pack.json``): how a pack file holds its runs' files and journals;
- a row's ``protocol_version``: what its figures mean (runs compare across machines when it agrees);
- a table file's layout version (:data:`LAYOUT`, its parquet schema metadata): which columns it
  holds and what their values mean; a file without one is layout 0, upgraded here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from harness.contract.machine import PROTOCOL_VERSION, MachineFacts
from harness.spec.axes import AXES, Axis
from harness.spec.protocol import DEFAULT_MIN_EFFECT

LAYOUT = 1
"""Today's table layout, written in every table file's schema metadata under :data:`LAYOUT_KEY`."""
LAYOUT_KEY = b"harness.layout"

AB_RULE_THEN = {"ab_min_effect": 0.02, "ab_min_pairs": 5}
"""The rule ``ab`` judged its pairs with before its rows recorded it: its defaults then."""
VERDICTS_THEN = {"regression": "lower", "improvement": "higher", "no change": "equivalent"}
"""A nightly point's rule (a) verdict as the suite said it before its four verdicts."""


def _axis_value(axis: Axis, value: Any, strategy: object) -> object:
    """A row's value of ``axis``: the stored one, or for a row written before the axis (null, or a
    word a string axis does not take: ``optimizer`` held ``SGD(learning_rate=0.01)``, the only one
    then) what the row ran then, the axis's default (where it applies). The axis's inapplicable
    value (``none``: no cross-device op on one device) stays."""
    if not pd.isna(value) and (
        axis.kind is not str or value in (*axis.choices, axis.inapplicable) or axis.name == "model"
    ):
        return value
    return axis.default if not axis.applies_to or strategy in axis.applies_to else axis.inapplicable


def _facts(row: pd.Series) -> str:
    """The facts a row written before the suite recorded them holds: the CPU model, its cores and
    the GPU it ran on (:attr:`MachineFacts.partial`: the rest unknown), as JSON."""
    kind, gpu, cpu, cores = (
        None if pd.isna(v) else v for v in row[["device_kind", "device_name", "host_cpu", "host_cores"]]
    )
    gpus = (str(gpu),) if kind == "GPU" and gpu else ()
    return MachineFacts(cpu_model=str(cpu or ""), cores=int(cores or 0), gpus=gpus, partial=True).to_json()


def _run(frame: pd.DataFrame) -> pd.DataFrame:
    """The run columns the cells, ratios and costs tables share: the protocol a run measured under
    before its rows said (version 1)."""
    return frame.assign(protocol_version=frame["protocol_version"].fillna(PROTOCOL_VERSION))


def _cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells rows: every axis, ``nodes`` (1: local), the machine's facts and name, ``ab``'s rule."""
    out = _run(frame).assign(nodes=frame["nodes"].fillna(1))
    for axis in AXES:
        values = [_axis_value(axis, v, s) for v, s in zip(out[axis.row_column], out["strategy"], strict=True)]
        out[axis.row_column] = pd.Series(values, index=out.index, dtype=out[axis.row_column].dtype)
    if len(out):
        out["machine_facts"] = out["machine_facts"].fillna(out.apply(_facts, axis=1))
        names = out["machine_facts"].map(lambda f: MachineFacts.from_json(f).default_name)
        out["machine"] = out["machine"].fillna(names)
    paired = out["ab_id"].notna()
    for column, then in AB_RULE_THEN.items():
        out[column] = out[column].mask(paired & out[column].isna(), then)
    return out


UPGRADES: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "cells": _cells,
    "ratios": lambda f: _run(f).assign(min_effect=f["min_effect"].fillna(DEFAULT_MIN_EFFECT)),
    "costs": lambda f: _run(f).assign(
        breakdown_s=f["breakdown_s"].fillna(0.0), breakdowns=f["breakdowns"].fillna(0)
    ),
    "points": lambda f: f.assign(verdict=f["verdict"].replace(VERDICTS_THEN)),
}
"""Each table's upgrade from layout 0 (a table not named: its columns mean what they meant)."""


def upgrade(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``, rows of ``table`` (a folder name of :data:`harness.results.store.TABLES`) read
    from files of layout 0, as today's layout holds them."""
    return UPGRADES[table](frame) if table in UPGRADES else frame
