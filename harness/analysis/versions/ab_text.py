"""``ab``'s output: a progress line per pair, the table per cell and the markdown for a CI comment."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from harness.analysis.run import render
from harness.analysis.versions.ab import Decision, Rule
from harness.spec.cell import Cell

HEADER = ("cell", "mode", "B/A", "95% CI", "pairs", "verdict")


class CellPairs(Protocol):
    """What this module reads of one cell's pairs (:class:`harness.launch.versions.ab.CellOutcome`)."""

    @property
    def cell(self) -> Cell: ...
    @property
    def mode(self) -> str: ...
    @property
    def ratios(self) -> Sequence[float]: ...
    @property
    def decision(self) -> Decision: ...
    @property
    def failure(self) -> str: ...
    @property
    def software(self) -> Mapping[str, str]: ...


def ci(d: Decision) -> str:
    """The ratio's 95% CI as ``0.950..0.992``, ``-`` without one."""
    return f"{d.low:.3f}..{d.high:.3f}" if math.isfinite(d.low) else "-"


def progress_line(outcome: CellPairs, order: str) -> str:
    """``cnn/... pair 4 (BA): B/A 0.962; so far 0.971 [0.950..0.992] undecided``."""
    d = outcome.decision
    return (
        f"{outcome.cell.id} pair {d.pairs} ({order}): B/A {outcome.ratios[-1]:.3f}; so far "
        f"{d.ratio:.3f} [{ci(d)}] {d.verdict}"
    )


def rows(outcomes: Sequence[CellPairs]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for o in outcomes:
        d = o.decision
        if o.failure:
            out.append((o.cell.id, o.mode, "-", "-", str(len(o.ratios)), f"failed: {o.failure[:80]}"))
        else:
            out.append(
                (o.cell.id, o.mode, f"{d.ratio:.3f}" if d.pairs else "-", ci(d), str(d.pairs), d.verdict)
            )
    return out


def markdown(outcomes: Sequence[CellPairs], verdict: str, rule: Rule) -> str:
    """The result as a CI comment: verdict, the table, the software of each side and the method."""
    software = next((o.software for o in outcomes if o.software), {})
    return render.markdown(
        "ab.md", verdict=verdict, header=HEADER, rows=rows(outcomes), software=software, rule=rule
    )
