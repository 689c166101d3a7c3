"""Tests of harness.contract.columns: a typed record's flat columns and back (no TensorFlow, no
process)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator
from dataclasses import replace
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.contract.columns import Estimate, flatten, leaves, unflatten, unflatten_all
from harness.contract.records import (
    AbInfo,
    Axes,
    Breakdown,
    CellRow,
    Checks,
    Efficiency,
    Energy,
    Execution,
    Flops,
    Foreign,
    Machine,
    RunInfo,
    Spread,
    Status,
    Tenancy,
    Timing,
    Updates,
    Utilization,
)

ESTIMATES = (
    "examples_per_sec",
    "scaling_efficiency",
    "cotenancy_ratio",
    "alone_examples_per_sec",
    "tenant_alone_examples_per_sec",
    "tenant_together_examples_per_sec",
    "shared_ratio",
    "tenant_shared_ratio",
    "interference_ratio",
    "peak_flops_per_sec",
)
"""The cell row's figures with a CI."""


def _optional(hint: object) -> tuple[object, bool]:
    """(the type without ``| None``, whether it had one)."""
    if get_origin(hint) in (Union, UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        return args[0], len(args) < len(get_args(hint))
    return hint, False


def _is_group(hint: object) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _filled(record: type, counter: Iterator[int] | None = None) -> Any:
    """A record (or group, or estimate) with every field set, each leaf to a value of its type
    distinct from the others' (but for booleans and statuses)."""
    counter = counter or itertools.count(1)
    kwargs: dict[str, object] = {}
    for name, hint in get_type_hints(record).items():
        base, _ = _optional(hint)
        n = next(counter)
        if _is_group(base):
            assert isinstance(base, type)
            kwargs[name] = _filled(base, counter)
        elif isinstance(base, type) and issubclass(base, Status):
            kwargs[name] = list(Status)[n % len(Status)]
        elif base is bool:
            kwargs[name] = n % 2 == 0
        elif base is int:
            kwargs[name] = n
        elif base is float:
            kwargs[name] = n + 0.25
        elif base is str:
            kwargs[name] = f"{name}-{n}"
        else:
            assert get_origin(base) is list, (record, name, hint)
            kwargs[name] = [float(n), n + 0.5]
    return record(**kwargs)


FULL: CellRow = _filled(CellRow)
"""A cell row with every group set and every column non-null."""


def test_a_cell_row_has_160_columns_with_unique_names() -> None:
    names = [leaf.name for leaf in leaves(CellRow)]
    assert (
        len(names) == 160
    )  # 137, then xla (--jit-compile), the GPU memory group, the GPU profile, the machine, the seed loss
    assert len(set(names)) == len(names)
    assert names[:4] == ["run_id", "timestamp", "suite_version", "resumes"]
    assert all(leaf.col.doc.strip() for leaf in leaves(CellRow))


def test_an_estimate_gives_three_columns() -> None:
    by_name = {leaf.name: leaf for leaf in leaves(CellRow)}
    for name in ESTIMATES:
        assert by_name[name].path[-1] == "value"
        assert by_name[f"{name}_ci_low"].path == (*by_name[name].path[:-1], "low")
        assert by_name[f"{name}_ci_high"].path == (*by_name[name].path[:-1], "high")
        assert by_name[f"{name}_ci_low"].col.unit == by_name[name].col.unit
    assert [leaf.name for leaf in leaves(CellRow) if leaf.path[0] == "examples_per_sec"] == [
        "examples_per_sec",
        "examples_per_sec_ci_low",
        "examples_per_sec_ci_high",
    ]
    assert len(leaves(Tenancy)) == len(dataclasses.fields(Tenancy)) + 2  # cotenancy_ratio
    assert [leaf.name for leaf in leaves(Efficiency)] == [
        "scaling_efficiency",
        "scaling_efficiency_ci_low",
        "scaling_efficiency_ci_high",
        "ratio_instances",
        "baseline_cell_id",
    ]


def test_a_group_adds_no_prefix() -> None:
    cols = flatten(FULL)
    assert cols["scaling_efficiency_ci_low"] == FULL.efficiency.scaling_efficiency.low
    assert cols["cell_id"] == FULL.cell.cell_id and cols["fingerprint"] == FULL.machine.fingerprint
    assert cols["status"] == FULL.status and cols["reason"] == FULL.reason


def test_a_fully_populated_row_round_trips() -> None:
    for group in (RunInfo, AbInfo, Axes, Spread, Timing, Execution, Efficiency, Flops, Updates):
        assert any(isinstance(getattr(FULL, f.name), group) for f in dataclasses.fields(CellRow))
    for group in (Tenancy, Foreign, Utilization, Energy, Checks, Breakdown, Machine):
        assert any(isinstance(getattr(FULL, f.name), group) for f in dataclasses.fields(CellRow))
    cols = flatten(FULL)
    assert list(cols) == [leaf.name for leaf in leaves(CellRow)]
    assert all(v is not None for v in cols.values())
    distinct = [repr(v) for v in cols.values() if not isinstance(v, bool | Status)]
    assert len(set(distinct)) == len(distinct)  # every column its own value: none lands in another's
    assert unflatten(CellRow, cols) == FULL
    assert flatten(unflatten(CellRow, cols)) == cols


def _leaf(hint: object) -> st.SearchStrategy[Any]:
    base, optional = _optional(hint)
    if isinstance(base, type) and issubclass(base, Status):
        values: st.SearchStrategy[Any] = st.sampled_from(list(Status))
    elif base is bool:
        values = st.booleans()
    elif base is int:
        values = st.integers(-(2**63), 2**63 - 1)
    elif base is float:
        values = st.floats(allow_nan=False)
    elif base is str:
        values = st.text(max_size=8)
    else:
        assert get_origin(base) is list, hint
        values = st.lists(st.floats(allow_nan=False), max_size=4)
    return st.none() | values if optional else values


def _records(record: type) -> st.SearchStrategy[Any]:
    """Records of a type, each field drawn from its type (a group of an optional field is None or
    holds a value: one all of whose columns are null reads back as None)."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, hint in get_type_hints(record).items():
        base, optional = _optional(hint)
        if not _is_group(base):
            fields[name] = _leaf(hint)
            continue
        assert isinstance(base, type)
        group = _records(base)
        if optional:
            group = st.none() | group.filter(lambda g: any(v is not None for v in flatten(g).values()))
        fields[name] = group
    return st.builds(record, **fields)


@settings(max_examples=50, deadline=None)
@given(_records(CellRow))
def test_any_row_round_trips(row: CellRow) -> None:
    cols = flatten(row)
    assert len(cols) == 160
    assert unflatten(CellRow, cols) == row


def test_nan_and_pandas_missing_values_read_as_none() -> None:
    cols = {
        **flatten(FULL),
        "cv_between_processes": float("nan"),
        "window_steps": pd.NA,
        "timestamp": pd.NaT,
        "examples_per_sec_ci_low": np.float64("nan"),
        "jit_compile": None,
    }
    row = unflatten(CellRow, cols, nan_is_null=True)
    assert row.spread.cv_between_processes is None and row.timing.window_steps is None
    assert row.examples_per_sec.low is None and row.ran.jit_compile is None
    assert row.examples_per_sec.value == FULL.examples_per_sec.value
    assert row.run.timestamp == ""  # always set: a null keeps the field's default


def test_a_nan_outside_a_data_frame_stays_nan_and_a_frame_s_nan_is_null() -> None:
    # a diverged loss in a worker's record event or the journal is NaN, not "unknown"
    cols = {**flatten(FULL), "final_loss": float("nan"), "window_steps": pd.NA}
    row = unflatten(CellRow, cols)
    assert math.isnan(row.checks.final_loss) and row.timing.window_steps is None
    (framed,) = unflatten_all(CellRow, [cols])  # a data frame's row: NaN is its null
    assert framed.checks.final_loss is None


def test_numpy_values_read_as_python_values() -> None:
    cols = {
        **flatten(FULL),
        "replicas": np.int64(2),
        "window_steps": np.int32(40),
        "examples_per_sec": np.float64(12.5),
        "learning_rate": np.float32(0.5),
        "unstable": np.bool_(True),
        "process_examples_per_sec": np.array([1.0, 2.5]),
    }
    row = unflatten(CellRow, cols)
    assert type(row.cell.replicas) is int and row.cell.replicas == 2
    assert type(row.timing.window_steps) is int and row.timing.window_steps == 40
    assert type(row.examples_per_sec.value) is float and row.examples_per_sec.value == 12.5
    assert type(row.cell.learning_rate) is float and row.cell.learning_rate == 0.5
    assert row.spread.unstable is True
    assert row.spread.process_examples_per_sec == [1.0, 2.5]
    assert all(type(v) is float for v in row.spread.process_examples_per_sec)


@pytest.mark.parametrize("status", list(Status))
def test_a_status_string_reads_as_its_status(status: Status) -> None:
    row = unflatten(CellRow, {**flatten(FULL), "status": str(status)})
    assert row.status is status
    with pytest.raises(ValueError, match="bogus"):
        unflatten(CellRow, {**flatten(FULL), "status": "bogus"})


def test_an_unknown_column_raises_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="not_a_column"):
        unflatten(CellRow, {**flatten(FULL), "not_a_column": 1})
    # unflatten_all drops them (a frame with columns its reader added)
    assert unflatten_all(CellRow, [{**flatten(FULL), "not_a_column": 1}]) == [FULL]


def test_a_column_missing_from_an_older_file_reads_as_none_or_the_default() -> None:
    missing = {
        "jit_compile",
        "ci_history_runs",
        "reason",
        "resumes",
        "ab_id",
        "loss",
        "examples_per_sec",
        "examples_per_sec_ci_low",
        "examples_per_sec_ci_high",
    }
    row = unflatten(CellRow, {k: v for k, v in flatten(FULL).items() if k not in missing})
    assert row.ran.jit_compile is None and row.spread.ci_history_runs is None
    assert row.reason == ""  # the field's default
    assert row.run.resumes is None and row.run.run_id == FULL.run.run_id
    assert row.ab is not None and row.ab.ab_id is None and row.ab.ab_side == FULL.ab.ab_side
    assert row.cell.loss is None and row.cell.model == FULL.cell.model
    assert row.examples_per_sec == Estimate()
    assert (
        replace(
            row,
            ran=FULL.ran,
            spread=FULL.spread,
            reason=FULL.reason,
            run=FULL.run,
            ab=FULL.ab,
            cell=FULL.cell,
            examples_per_sec=FULL.examples_per_sec,
        )
        == FULL
    )


def test_an_optional_group_with_every_column_null_reads_as_none() -> None:
    cols = flatten(FULL)
    machine = [leaf.name for leaf in leaves(CellRow) if leaf.path[0] == "machine"]
    ab = [leaf.name for leaf in leaves(CellRow) if leaf.path[0] == "ab"]
    timing = [leaf.name for leaf in leaves(CellRow) if leaf.path[0] == "timing"]
    assert machine and ab and timing
    row = unflatten(CellRow, {**cols, **dict.fromkeys(machine), **dict.fromkeys(ab)})
    assert row.machine is None and row.ab is None
    assert replace(row, machine=FULL.machine, ab=FULL.ab) == FULL
    # the same with pandas' missing values, and with the columns absent altogether
    row = unflatten(
        CellRow,
        {**cols, **dict.fromkeys(machine, pd.NA), **dict.fromkeys(ab, float("nan"))},
        nan_is_null=True,
    )
    assert row.machine is None and row.ab is None
    row = unflatten(CellRow, {k: v for k, v in cols.items() if k not in {*machine, *ab}})
    assert row.machine is None and row.ab is None
    # a group whose field is not optional reads back as its default
    assert unflatten(CellRow, {**cols, **dict.fromkeys(timing)}).timing == Timing()
    # one column set is enough to keep the group
    row = unflatten(CellRow, {**cols, **dict.fromkeys(machine), "fingerprint": "fp"})
    assert row.machine == Machine(fingerprint="fp")


def test_a_none_group_flattens_to_null_columns() -> None:
    cols = flatten(replace(FULL, machine=None, ab=None))
    assert cols["fingerprint"] is None and cols["ab_id"] is None and cols["host_cores"] is None
    assert sum(v is None for v in cols.values()) == len(leaves(Machine)) + len(leaves(AbInfo))


def test_estimate_of_non_finite_ci_ends_is_none() -> None:
    assert Estimate.of(1.0, float("nan"), math.inf) == Estimate(1.0, None, None)
    assert math.isnan(Estimate.of(float("nan"), 1.0, 2.0).value or 0.0)  # the figure as computed
    assert Estimate.of(2.0, 1.0, 3.0) == Estimate(2.0, 1.0, 3.0)
