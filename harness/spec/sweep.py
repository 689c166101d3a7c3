"""Sweeps as data: a :class:`Sweep` is a named union of grids, :func:`expand` (pure) turns it into cells."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.errors import HarnessError
from harness.spec.axes import AXES, AXIS_BY_NAME, REPLICAS_TO_DEVICES, REPLICAS_TO_MAX, AxisValue
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol

Grid = tuple[tuple[str, tuple[AxisValue, ...]], ...]
"""Axis name -> values; axes left out take their default. Its cells are the product."""


@dataclass(frozen=True)
class Sweep:
    """A named union of grids (usually one); the cell set is the union of their products."""

    name: str
    description: str
    grids: tuple[Grid, ...] = ((),)
    protocol: Protocol = field(default_factory=Protocol)
    kind: str = "training"
    """training (each cell trains a model) or collectives (each cell's topology times all-reduces,
    :mod:`harness.spec.collectives`)."""
    headline: tuple[Grid, ...] = ()
    """Grids (also among ``grids``) of each model's contenders for its fastest configuration: a
    run measures them first, live together, each against the fastest of them
    (:func:`harness.spec.groups.headline_groups`). Empty: no headline group."""
    on_bf16: tuple[Grid, ...] = ()
    """Headline grids that join the contenders on a CPU with bfloat16 units
    (:attr:`Platform.cpu_bf16`, :func:`on`)."""
    on_gpu: Sweep | None = None
    """The same sweep as planned on a GPU host (:func:`on`): its own headline (the contenders a
    GPU user chooses between) and grids. None: this one there too."""

    def grid_values(self) -> list[dict[str, tuple[AxisValue, ...]]]:
        """Every axis's values, grid by grid (defaults filled in)."""
        return [{**{a.name: (a.default,) for a in AXES}, **dict(grid)} for grid in self.grids]

    def values(self) -> dict[str, tuple[AxisValue, ...]]:
        """Every value each axis takes in any grid, in first-seen order."""
        merged: dict[str, tuple[AxisValue, ...]] = {}
        for grid in self.grid_values():
            for name, vals in grid.items():
                merged[name] = tuple(dict.fromkeys((*merged.get(name, ()), *vals)))
        return merged

    def with_axes(self, overrides: dict[str, tuple[AxisValue, ...]]) -> Sweep:
        """A copy with some axes replaced in every grid (the CLI's explicit axis flags)."""

        def override(grids: tuple[Grid, ...]) -> tuple[Grid, ...]:
            return tuple(dict.fromkeys(tuple({**dict(g), **overrides}.items()) for g in grids))

        return dataclasses.replace(
            self,
            grids=override(self.grids),
            headline=override(self.headline),
            on_bf16=override(self.on_bf16),
            on_gpu=None if self.on_gpu is None else self.on_gpu.with_axes(overrides),
        )


def make_sweep(
    name: str, description: str, protocol: Protocol | None = None, **axes: Sequence[object]
) -> Sweep:
    """A one-grid Sweep from keyword axes, checking every value (HarnessError on a bad one)."""
    checked: list[tuple[str, tuple[AxisValue, ...]]] = []
    for axis_name, values in axes.items():
        if axis_name not in AXIS_BY_NAME:
            raise HarnessError(f"Unknown axis {axis_name!r}; expected one of: {', '.join(AXIS_BY_NAME)}.")
        checked.append((axis_name, tuple(AXIS_BY_NAME[axis_name].check(v) for v in values)))
    return Sweep(name, description, (tuple(checked),), protocol or Protocol())


def chain(
    name: str, description: str, protocol: Protocol | None, *parts: Sweep, kind: str = "training"
) -> Sweep:
    """The union of several sweeps' grids, as one named sweep of ``kind`` (:attr:`Sweep.kind`)."""
    return Sweep(name, description, tuple(g for p in parts for g in p.grids), protocol or Protocol(), kind)


def with_headline(sweep: Sweep, *parts: Sweep) -> Sweep:
    """``sweep`` with ``parts``' grids added first, as its headline (:attr:`Sweep.headline`)."""
    grids = tuple(g for p in parts for g in p.grids)
    return dataclasses.replace(sweep, grids=grids + sweep.grids, headline=grids)


def on(sweep: Sweep, platform: Platform) -> Sweep:
    """``sweep`` as planned on ``platform``: its :attr:`Sweep.on_gpu` on a GPU host, where it has
    one; on a CPU with bfloat16 units, its :attr:`Sweep.on_bf16` grids among its headline."""
    if platform.device_kind == "gpu":
        return sweep if sweep.on_gpu is None else sweep.on_gpu
    if not platform.cpu_bf16 or not sweep.on_bf16:
        return sweep
    extra, n = tuple(g for g in sweep.on_bf16 if g not in sweep.grids), len(sweep.headline)
    grids = sweep.grids[:n] + extra + sweep.grids[n:]  # the headline's grids come first (with_headline)
    return dataclasses.replace(sweep, grids=grids, headline=sweep.headline + extra, on_bf16=())


def contenders(sweep: Sweep, platform: Platform) -> tuple[str, ...]:
    """The ids of each model's configurations to race for its fastest on ``platform``, in
    :func:`expand`'s order: the sweep's headline cells (:func:`on`); a training sweep without a
    headline, every cell (on a GPU host, those on whole GPUs: logical GPUs share one GPU's compute)."""
    planned = on(sweep, platform)
    if planned.kind != "training":
        return ()
    if not planned.headline:
        cells = expand(planned, platform)
        return tuple(c.id for c in cells if platform.device_kind != "gpu" or c.replicas <= platform.devices)
    return tuple(c.id for c in expand(dataclasses.replace(planned, grids=planned.headline), platform))


def doubling(devices: int) -> list[int]:
    """1, 2, 4, ... up to ``devices``, and ``devices`` itself (:data:`REPLICAS_TO_DEVICES`)."""
    out = [2**k for k in range(devices.bit_length()) if 2**k <= devices]
    return out + ([devices] if devices and out[-1] != devices else [])


REPLICA_COUNTS: dict[AxisValue, Callable[[Platform], Sequence[int]]] = {
    REPLICAS_TO_MAX: lambda p: range(1, p.max_replicas + 1),
    REPLICAS_TO_DEVICES: lambda p: doubling(p.devices),
}
"""The replica counts each replica-axis token stands for on a platform."""


def expand(sweep: Sweep, platform: Platform) -> list[Cell]:
    """Every distinct cell of the sweep as planned on ``platform`` (:func:`on`), in a stable order
    (topologies grouped, 1 replica first). Axes that do not apply to a strategy collapse (see
    :meth:`Cell.__post_init__`), so ``default`` with replicas ``1,2`` is one cell, not two. Nothing
    else is dropped: unsupported cells stay, to be reported."""
    names = [a.name for a in AXES]
    seen: dict[str, Cell] = {}
    for values in on(sweep, platform).grid_values():
        values["replicas"] = tuple(
            n
            for v in values["replicas"]
            for n in (REPLICA_COUNTS[v](platform) if v in REPLICA_COUNTS else [v])
        )
        for combo in itertools.product(*(values[n] for n in names)):
            cell = Cell.from_dict(dict(zip(names, combo, strict=True)))
            seen.setdefault(cell.id, cell)
    order = {cell_id: i for i, cell_id in enumerate(seen)}
    return sorted(seen.values(), key=lambda c: (c.topology, order[c.id]))
