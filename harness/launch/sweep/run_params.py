"""A measuring run's parameters, grouped by what they say: what it measures (:class:`Work`), where
it writes (:class:`Output`), which run it is (:class:`Identity`: a new one, or one resumed from its
journal) and the hooks a test injects (:class:`Hooks`). :func:`harness.launch.sweep.budget.run_in_turns`
takes them, and :mod:`harness.launch.sweep.sweep_run` builds them for ``run``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.launch.cells.peak import PeakLog
from harness.launch.cells.progress import Progress
from harness.launch.cells.runner import Launcher, run_cell_processes
from harness.launch.instances.resume import Resumed
from harness.launch.system.platform import HostMachine
from harness.results.journal import Journal
from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol


@dataclass(frozen=True)
class Work:
    """What a run measures: its cells, how each is timed (``protocol``, the budget included), what
    the machine offers (``platform``), the MNIST file of the cells that train on it,
    ``contenders``: the ids of the cells raced for each model's fastest first
    (:func:`harness.spec.groups.headline_groups`), and ``machine``: the name and facts every row
    carries (``--machine``; a resumed run: its journal's; None: this host under its default name)."""

    cells: tuple[Cell, ...]
    protocol: Protocol
    platform: Platform
    mnist_path: str | None = None
    contenders: tuple[str, ...] = ()
    machine: HostMachine | None = None


@dataclass(frozen=True)
class Output:
    """Where a run writes: its results folder (rows, windows, ratios, costs, logs), and its
    journal, where every instance, peak and stage is appended as it ends (None: not journaled)."""

    results: Path
    journal: Journal | None = None


@dataclass(frozen=True)
class Identity:
    """Which run this is: its id (None: a new one), the journaled run it resumes (None: a new run;
    else ``run_id`` and the journal are that run's), and when its command started on the hooks'
    clock (the budget counts from there; None: when the run starts)."""

    run_id: str | None = None
    resumed: Resumed | None = None
    started: float | None = None


@dataclass(frozen=True)
class Hooks:
    """What a test replaces: how a cell's processes start (``launcher``), the budget's ``clock``,
    the ``progress`` line (None: one on stdout) and the run's ``peaks`` (None: a
    :class:`~harness.launch.cells.peak.PeakLog` of the cells' dtypes, measured in its own processes)."""

    launcher: Launcher = run_cell_processes
    clock: Callable[[], float] = time.monotonic
    progress: Progress | None = None
    peaks: PeakLog | None = None


NEW_RUN = Identity()
"""A new run: a new id, no journal to resume, its budget counted from when it starts."""

REAL = Hooks()
"""The real launcher, clock, progress line and peak processes."""
