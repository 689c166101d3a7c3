"""A measuring run's parameters for :func:`harness.launch.sweep.budget.run_in_turns`: what it
measures (:class:`Work`), where it writes (:class:`Output`), which run it is (:class:`Identity`)
and the hooks a test injects (:class:`Hooks`)."""

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
    """What a run measures: its cells, ``protocol`` (the budget included), ``platform``, the MNIST
    file, ``contenders`` (the cells raced first for each model's fastest) and ``machine``: the name
    and facts every row carries (None: this host under its default name)."""

    cells: tuple[Cell, ...]
    protocol: Protocol
    platform: Platform
    mnist_path: str | None = None
    contenders: tuple[str, ...] = ()
    machine: HostMachine | None = None


@dataclass(frozen=True)
class Output:
    """Where a run writes: its results folder, and its journal (None: not journaled)."""

    results: Path
    journal: Journal | None = None


@dataclass(frozen=True)
class Identity:
    """Which run this is: its id (None: a new one), the journaled run it resumes (None: none), and
    when its command started on the hooks' clock (s; None: when the run starts)."""

    run_id: str | None = None
    resumed: Resumed | None = None
    started: float | None = None


@dataclass(frozen=True)
class Hooks:
    """What a test replaces: ``launcher``, the budget's ``clock``, the ``progress`` line (None: one on
    stdout) and the run's ``peaks`` (None: measured in their own processes)."""

    launcher: Launcher = run_cell_processes
    clock: Callable[[], float] = time.monotonic
    progress: Progress | None = None
    peaks: PeakLog | None = None


NEW_RUN = Identity()
"""A new run: a new id, no journal to resume, its budget counted from when it starts."""

REAL = Hooks()
"""The real launcher, clock, progress line and peak processes."""
