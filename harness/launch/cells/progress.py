"""Progress of a sweep on stderr: a live rich progress bar on a terminal (the cell being measured,
done/total, elapsed, ETA), one plain line per finished cell otherwise (CI logs, pipes). A run under
a budget (:meth:`Progress.under_budget`) counts its steps with no total, since the budget decides
how many come, and its clock reads the budget spent of the whole."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
)
from rich.progress import Progress as RichProgress
from rich.table import Column
from rich.text import Text


def format_eta(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a non-negative number of seconds."""
    s = round(max(seconds, 0.0))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _isatty(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that can redraw a line (not TERM=dumb, as in Emacs)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
    return tty and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")


class _OwnerColumn(ProgressColumn):
    """A text from the owning :class:`Progress` (``text``), redrawn with the bar."""

    def __init__(self, text: Callable[[], str]) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.text = text

    def render(self, task: Task) -> Text:
        return Text(self.text(), style="progress.remaining")


class Progress:
    """Progress over ``total`` cells, written to ``stream`` (default stderr): on a terminal a rich
    bar redrawn in place from the first :meth:`show` (the cell measured, ``done/total``, elapsed and
    ETA); else one plain line per finished cell (``[3/13] cnn/default/r1w1/b64 ok  ETA 0:42``).
    ``force_terminal`` overrides the detection (``stream.isatty()``, TERM not dumb); colours follow
    rich (``NO_COLOR``). ``width``: the bar's, in characters; ``clock`` (seconds): for tests. End it
    with :meth:`close` (or use it as a context manager)."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        width: int = 20,
        force_terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        estimate: Callable[[], float | None] | None = None,
    ) -> None:
        self.total, self.done = total, 0
        self.estimate = estimate
        """The run's own estimate of its seconds left (a run in turns knows its groups and budget),
        replacing the mean-per-step one; None from it: unknown."""
        self.clock = clock
        self.stream = stream or sys.stderr
        self.tty = _isatty(self.stream) if force_terminal is None else force_terminal
        self.width = width
        self.t0 = clock()
        self.t_last = self.t0
        """When the last cell finished (the start, before any did)."""
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        self.budget_s: float | None = None
        self.spent: Callable[[], float] | None = None
        """The budget's seconds and those spent (a resumed run's included), by :meth:`under_budget`."""

    def under_budget(self, budget_s: float, spent: Callable[[], float]) -> None:
        """Count the steps with no total (the budget decides how many come: a total would grow
        with them) and read the clock as ``spent()`` of ``budget_s`` seconds."""
        self.budget_s, self.spent = budget_s, spent

    def elapsed(self) -> float:
        """Seconds since this progress was made (under a budget: the budget's seconds spent)."""
        return self.spent() if self.spent is not None else self.clock() - self.t0

    def clock_text(self) -> str:
        """``elapsed 1:02  ETA 3:10``; under a budget ``elapsed 1:02 of 10:00 budget  ETA 3:10``."""
        whole = "" if self.budget_s is None else f" of {format_eta(self.budget_s)} budget"
        return f"elapsed {format_eta(self.elapsed())}{whole}  ETA {self.eta_text()}"

    def _count(self) -> str:
        """``3/13``, or under a budget ``3``."""
        return f"{self.done}/{self.total}" if self.budget_s is None else str(self.done)

    def _filled(self) -> tuple[float, float]:
        """The bar's (completed, total): steps done of the total, or the budget's seconds spent."""
        if self.budget_s is None:
            return self.done, self.total
        return min(self.elapsed(), self.budget_s), self.budget_s

    def eta(self) -> float | None:
        """Seconds left: the mean time per finished step times the steps left, less the time the
        current step has run so far (never below 0); None before any step finished. A run's own
        ``estimate``, where given, replaces this."""
        if self.estimate is not None:
            return self.estimate()
        if not self.done:
            return None
        per_cell = (self.t_last - self.t0) / self.done
        return max(per_cell * (self.total - self.done) - (self.clock() - self.t_last), 0.0)

    def eta_text(self) -> str:
        """:meth:`eta` as ``m:ss``, ``?`` when unknown."""
        eta = self.eta()
        return "?" if eta is None else format_eta(eta)

    def show(self, current: str) -> None:
        """``current`` is now being measured (shown on a terminal only)."""
        if not self.tty:
            return
        if self._bar is None:
            self._start(current)
        self._update(description=current)

    def advance(self, current: str = "", status: str = "") -> None:
        """``current`` finished, as ``status`` (``ok``, ``failed``, ...)."""
        self.done += 1
        self.t_last = self.clock()
        if self.tty:
            self.show(current)
            return
        cell = " ".join(s for s in (current, status) if s)
        clock = self.clock_text() if self.budget_s is not None else f"ETA {self.eta_text()}"
        self.stream.write(f"[{self._count()}] {cell}  {clock}\n")
        self.stream.flush()

    def warn(self, text: str) -> None:
        """A line that stays: above the live bar on a terminal, else a plain line."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the live bar, leaving its last state on screen; idempotent."""
        if self._bar is not None:
            if self._task is not None and (self.budget_s is not None or self.done >= self.total):
                self._bar.update(self._task, description="", completed=self._filled()[1])
            self._bar.refresh()
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _update(self, description: str | None = None) -> None:
        """The bar filled as :meth:`_filled` says, ``description`` the step (None: unchanged)."""
        assert self._bar is not None and self._task is not None
        completed, total = self._filled()
        self._bar.update(self._task, completed=completed, total=total, description=description)

    def _start(self, current: str) -> None:
        console = Console(file=self.stream, force_terminal=True)
        self._bar = RichProgress(
            SpinnerColumn(finished_text="[progress.spinner]done"),
            BarColumn(bar_width=self.width, table_column=Column(no_wrap=True)),
            MofNCompleteColumn(table_column=Column(no_wrap=True))
            if self.budget_s is None
            else _OwnerColumn(self._count),
            _OwnerColumn(self.clock_text),
            TextColumn(
                "{task.description}", markup=False, table_column=Column(overflow="ellipsis")
            ),  # the one to shorten
            console=console,
        )
        self._task = self._bar.add_task(current, total=self._filled()[1])
        self._update()
        self._bar.start()
