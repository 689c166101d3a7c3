"""One home per axis: every list of axes is derived from the descriptors in harness.spec.axes.

The source scan fails when a module outside the axis's home spells out three or more axis names in
one tuple, list or set literal (as strings or as attributes, ``(a.model, a.data, a.precision)``):
such a list silently misses an axis added later. Descriptor data that names the axes to try for
one bound (:data:`harness.formulas.breakdown.BOUNDS`) is a registry entry, not such a list.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from harness.contract.records import Axes
from harness.spec.axes import (
    ALONE,
    AXES,
    AXIS_BY_NAME,
    BASELINE,
    COMPUTES,
    DEVICE_AXES,
    OPTION_AXES,
    SENTENCE_AXES,
    key_axes,
)
from harness.spec.cell import Cell
from harness.spec.strategies import STRATEGIES

HARNESS = Path(__file__).resolve().parents[3] / "harness"
HOME = {"spec/axes.py", "spec/cell.py"}
"""The axis's home, and the cell whose fields and id are the axes themselves."""
REGISTRIES = {("formulas/breakdown.py", "Bound")}
"""(module, call) pairs whose literal axis names are one descriptor entry each."""
NAMES = {a.name for a in AXES} | {a.row_field for a in AXES if a.row_field}


def _axis_names(node: ast.expr) -> list[str]:
    strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in NAMES]  # type: ignore[attr-defined]
    attrs = [e.attr for e in node.elts if isinstance(e, ast.Attribute) and e.attr in NAMES]  # type: ignore[attr-defined]
    return max(strings, attrs, key=len)


def _literal_axis_lists(source: str, rel: str) -> list[str]:
    """'module:line: names' for each literal collection of 3 or more axis names in ``source`` (the
    module ``rel`` under harness/) outside a registry entry."""
    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (rel, node.func.id) in REGISTRIES
        ):
            allowed |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in allowed:
            names = _axis_names(node)
            if len(names) >= 3:
                found.append(f"{rel}:{node.lineno}: {names}")
    return found


def test_no_module_keeps_its_own_list_of_axes() -> None:
    found = [
        hit
        for path in sorted(HARNESS.rglob("*.py"))
        if path.relative_to(HARNESS).as_posix() not in HOME
        for hit in _literal_axis_lists(path.read_text(), path.relative_to(HARNESS).as_posix())
    ]
    assert not found, "derive these from harness.spec.axes (Axis.keys, SENTENCE_AXES, ...):\n" + "\n".join(
        found
    )


def test_the_scan_finds_a_planted_list() -> None:
    planted = "KEY = ('model', 'data', 'precision')\nROW = [r.model, r.loop, r.per_replica_batch]\n"
    assert len(_literal_axis_lists(planted, "analysis/planted.py")) == 2
    # the same names inside a registry entry are that entry's data
    assert not _literal_axis_lists("B = Bound('x', ('batch', 'xla', 'loop'))", "formulas/breakdown.py")


def test_every_axis_is_a_cell_field_and_a_cells_column() -> None:
    assert {f.name for f in dataclasses.fields(Cell)} == {a.name for a in AXES}
    columns = {f.name for f in dataclasses.fields(Axes)}
    assert {a.row_column for a in AXES} <= columns


@pytest.mark.parametrize("axis", AXES, ids=lambda a: a.name)
def test_every_axis_says_itself(axis) -> None:
    assert axis.column_doc and axis.help
    assert axis.keys <= {BASELINE, ALONE, COMPUTES}
    value = axis.default if axis.kind is int else (axis.choices[0] if axis.choices else axis.default)
    assert axis.say(value)


def test_sentence_axes_are_every_axis_but_the_model() -> None:
    assert sorted(("model", *SENTENCE_AXES)) == sorted(a.name for a in AXES)


def test_identity_keys() -> None:
    names = {key: [a.name for a in key_axes(key)] for key in (BASELINE, ALONE, COMPUTES)}
    # a 1-device baseline differs in its devices, their all-reduce and the batch's meaning
    assert not set(names[BASELINE]) & {"replicas", "workers", "cross_device_ops", "communication", "scaling"}
    # a co-tenant cell alone differs only in its tenants
    assert set(names[ALONE]) == {a.name for a in AXES} - {"tenants"}
    assert set(names[COMPUTES]) <= set(names[BASELINE])


def test_option_and_device_axes_come_from_the_strategies() -> None:
    assert set(OPTION_AXES) == {s.option_axis for s in STRATEGIES.values()} - {None}
    assert set(DEVICE_AXES) == {s.device_axis for s in STRATEGIES.values()} - {None}
    assert all(name in AXIS_BY_NAME for name in (*OPTION_AXES, *DEVICE_AXES))
