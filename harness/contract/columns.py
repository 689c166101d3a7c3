"""A typed record and its flat columns: the one mapping between them.

A record of :mod:`harness.contract.records` is a frozen dataclass whose fields are columns
(``Annotated[type, Col(...)]``), groups (a dataclass whose fields are columns, inlined: a group
adds no prefix) or estimates (``Annotated[Estimate, Col(...), CI(...)]``: three columns, ``name``,
``name_ci_low``, ``name_ci_high``). :func:`leaves` lists a record's columns in order;
:func:`flatten` and :func:`unflatten` turn a record into its columns and back. The parquet schema
(:mod:`harness.results.store`), the worker's record events and ``results/README.md`` all derive from
these three functions. Pure: no pyarrow, pandas or numpy."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

Columns = dict[str, object]
"""A record's flat columns, by name (a row of a parquet table, a record event's ``row``)."""

R = TypeVar("R")


@dataclass(frozen=True)
class Col:
    """A column's documentation: its unit ("" for none) and meaning; ``figure``: a measured figure,
    which a row that failed or did not pass its checks never carries (:func:`without_figures`);
    ``median``: measured per process, a cell's row gives its median over the cell's processes."""

    unit: str
    doc: str
    figure: bool = False
    median: bool = False


@dataclass(frozen=True)
class CI:
    """An estimate's two CI columns' meanings (their unit is the estimate's)."""

    low: str
    high: str = "Upper end of the same CI."


@dataclass(frozen=True)
class Estimate:
    """A figure and its 95% CI, in the figure's unit; None where unknown (no figure, or too few
    values for a CI)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None

    @staticmethod
    def of(value: float, low: float, high: float) -> Estimate:
        """A figure and its CI as computed: a CI end that is not finite (NaN: too few values) is
        stored as None; the figure as it is."""
        return Estimate(value, finite(low), finite(high))


def finite(x: float) -> float | None:
    """``x``, or None where it is not finite (NaN: too few values; inf): how a stored column says
    "unknown"."""
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Leaf:
    """One column of a record: its name, where it lives (the attribute path from the record), its
    Python type (``| None`` kept) and its documentation."""

    name: str
    path: tuple[str, ...]
    hint: object
    col: Col


def _strip_none(hint: object) -> tuple[object, bool]:
    """(the type without ``| None``, whether it had one)."""
    if get_origin(hint) in (Union, UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        return (args[0] if len(args) == 1 else hint), len(args) < len(get_args(hint))
    return hint, False


_LEAVES: dict[type, tuple[Leaf, ...]] = {}


def leaves(record: type) -> tuple[Leaf, ...]:
    """Every column of a record type (a dataclass, or a flat TypedDict), in declaration order
    (groups inlined)."""
    if record not in _LEAVES:
        _LEAVES[record] = _leaves(record)
    return _LEAVES[record]


def _leaves(record: type) -> tuple[Leaf, ...]:
    out: list[Leaf] = []
    for name, hint in get_type_hints(record, include_extras=True).items():
        meta: tuple[Any, ...] = ()
        if get_origin(hint) is Annotated:
            hint, *rest = get_args(hint)
            meta = tuple(rest)
        base, _ = _strip_none(hint)
        if isinstance(base, type) and dataclasses.is_dataclass(base) and base is not Estimate:  # a group
            out += [dataclasses.replace(leaf, path=(name, *leaf.path)) for leaf in leaves(base)]
            continue
        col = next(m for m in meta if isinstance(m, Col))
        if base is Estimate:
            ci = next(m for m in meta if isinstance(m, CI))
            out.append(Leaf(name, (name, "value"), float | None, col))
            for end, doc in (("low", ci.low), ("high", ci.high)):
                out.append(
                    Leaf(f"{name}_ci_{end}", (name, end), float | None, dataclasses.replace(col, doc=doc))
                )
        else:
            out.append(Leaf(name, (name,), hint, col))
    names = [leaf.name for leaf in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TypeError(f"{record.__name__} declares these columns twice: {dupes}")
    return tuple(out)


def column_names(record: type) -> frozenset[str]:
    """The names of a record type's columns."""
    return frozenset(leaf.name for leaf in leaves(record))


def flatten(record: object) -> Columns:
    """A record's columns (a group that is None gives None in each of its columns); TypeError for
    anything but a record (a dict of columns is not one)."""
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"flatten takes a record of harness.contract.records, not {type(record).__name__}")
    out: Columns = {}
    for leaf in leaves(type(record)):
        value: object = record
        for step in leaf.path:
            value = None if value is None else getattr(value, step)
        out[leaf.name] = value
    return out


def without_figures(record: R) -> R:
    """The record with every column marked ``figure`` (:class:`Col`) set to None."""
    columns = flatten(record)
    figures = {leaf.name for leaf in leaves(type(record)) if leaf.col.figure}
    return unflatten(type(record), {k: None if k in figures else v for k, v in columns.items()})


def _value(hint: object, raw: object, nan_is_null: bool) -> object:
    """A value as the field's type: pandas' missing values (and NaN, with ``nan_is_null``: a data
    frame's null float) as None, numpy scalars and arrays as Python numbers and lists, strings as
    their enum."""
    if raw is None or type(raw).__name__ in ("NAType", "NaTType"):
        return None
    if nan_is_null and isinstance(raw, numbers.Real) and math.isnan(raw):
        return None
    base, _ = _strip_none(hint)
    if isinstance(base, type) and issubclass(base, Enum):
        return base(raw)
    if base is bool:
        return bool(raw)
    if base is int:
        return int(raw)  # type: ignore[call-overload]
    if base is float:
        return float(raw)  # type: ignore[arg-type]
    if base is str:
        return str(raw)
    if get_origin(base) is list:
        return [_value(get_args(base)[0], v, nan_is_null) for v in raw]  # type: ignore[attr-defined]
    return raw


_HINTS: dict[type, dict[str, Any]] = {}


def _build(record: type[R], values: Mapping[tuple[str, ...], object]) -> R:
    """A record (or group) from its columns' values keyed by path: a group or estimate all of whose
    columns are None is None where its field may be None, else the field's default; a column that
    is None where its type says it is always set keeps the field's default (an older file)."""
    kwargs: dict[str, object] = {}
    if record not in _HINTS:  # a record type's field types, evaluated once per type
        _HINTS[record] = get_type_hints(record)
    hints = _HINTS[record]
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        base, optional = _strip_none(hints[f.name])
        has_default = f.default is not dataclasses.MISSING
        if isinstance(base, type) and dataclasses.is_dataclass(base):
            inner = {p[1:]: v for p, v in values.items() if p[0] == f.name}
            if all(v is None for v in inner.values()) and (optional or has_default):
                if optional:
                    kwargs[f.name] = None
                continue
            kwargs[f.name] = _build(base, inner)
            continue
        value = values.get((f.name,))
        if value is None and not optional and has_default:
            continue
        kwargs[f.name] = value
    return record(**kwargs)


def unflatten(record: type[R], columns: Mapping[str, object], nan_is_null: bool = False) -> R:
    """The record of these columns (columns it does not know raise KeyError; columns missing, e.g.
    in a file written before they existed, read as None or the field's default). A float NaN stays
    NaN (a diverged loss, in a worker's event or the journal) unless ``nan_is_null`` (a data
    frame's rows, where a null float reads as NaN)."""
    unknown = set(columns) - column_names(record)
    if unknown:
        raise KeyError(f"columns not in {record.__name__}: {sorted(unknown)}")
    values = {leaf.path: _value(leaf.hint, columns.get(leaf.name), nan_is_null) for leaf in leaves(record)}
    return _build(record, values)


def unflatten_all(record: type[R], rows: Iterable[Mapping[Any, object]]) -> list[R]:
    """:func:`unflatten` of each row of a data frame (its ``to_dict("records")``: NaN is null),
    columns the record does not know dropped (a frame with columns added by its reader)."""
    known = column_names(record)
    return [
        unflatten(record, {str(k): v for k, v in r.items() if str(k) in known}, nan_is_null=True)
        for r in rows
    ]
