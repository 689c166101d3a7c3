"""Where a run's wall time went (the ``costs`` table's row, :class:`~harness.contract.records.CostRow`):
each group instance's phases on the parent's clock, summed over the run, and the fixed cost of
one measured process."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.contract.records import CostRow, RunInfo

PHASES = ("start", "calibration", "turns", "finish", "exit")
"""An instance's phases, in order (seconds each; they add up to its wall time)."""

PHASE_TEXT = {
    "start": "start-up to every member ready",
    "calibration": "calibration",
    "turns": "window turns",
    "finish": "checks",
    "exit": "exit",
}


@dataclass
class RunCost:
    """The run's instances so far: phase seconds summed, processes, and each completed instance's
    fixed cost per process (s)."""

    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    windows_s: float = 0.0
    instances: int = 0
    processes: int = 0
    fixed_per_process: list[float] = field(default_factory=list)
    peak_s: float = 0.0
    member_s: list[tuple[float, int]] = field(default_factory=list)
    """Each completed instance's seconds but its window turns, and its members."""
    turns_s: list[tuple[float, float]] = field(default_factory=list)
    """Each completed instance's window turns: their seconds, and the seconds of turns asked."""
    breakdown_s: list[float] = field(default_factory=list)
    """Each step breakdown process's wall seconds (:mod:`harness.launch.instances.breakdowns`)."""

    def add(
        self,
        phases: Mapping[str, float],
        windows_s: float,
        processes: int,
        completed: bool,
        members: int = 0,
        asked_s: float = 0.0,
    ) -> None:
        """One instance: its ``phases`` (s), the seconds of its timed windows, the processes it
        started, its members and the seconds of window turns it asked for (members x 2 x blocks x
        turn_s); a completed one's fixed cost per process is kept."""
        for name in PHASES:
            self.phases[name] += phases.get(name, 0.0)
        self.windows_s += windows_s
        self.instances += 1
        self.processes += processes
        wall = sum(phases.get(name, 0.0) for name in PHASES)
        if not completed:
            return
        if processes:
            self.fixed_per_process.append(max(wall - windows_s, 0.0) / processes)
        turns = phases.get("turns", 0.0)
        if members:
            self.member_s.append((wall - turns, members))
        if asked_s:
            self.turns_s.append((turns, asked_s))

    def instance_s(self, members: int, asked_s: float = 0.0) -> float | None:
        """An instance's seconds, estimated from the completed ones: the window turns asked for
        (``asked_s``) x how much longer turns took than asked, plus ``members`` x the seconds per
        member outside window turns; None before one completed."""
        counted = sum(n for _, n in self.member_s)
        if not counted:
            return None
        per_member = sum(s for s, _ in self.member_s) / counted
        asked = sum(a for _, a in self.turns_s)
        stretch = sum(t for t, _ in self.turns_s) / asked if asked else 1.0
        return asked_s * stretch + members * per_member

    def breakdown_process_s(self) -> float | None:
        """The mean wall seconds of the run's step breakdown processes so far (None before one)."""
        return sum(self.breakdown_s) / len(self.breakdown_s) if self.breakdown_s else None

    @property
    def fixed_s_per_process(self) -> float | None:
        return statistics.median(self.fixed_per_process) if self.fixed_per_process else None

    def parent_s(self, wall_s: float) -> float:
        return max(wall_s - sum(self.phases.values()) - self.peak_s - sum(self.breakdown_s), 0.0)

    def row(
        self, run: RunInfo, fingerprint: str | None, wall_s: float, budget_s: float, forked: bool
    ) -> CostRow:
        """The costs table's row of ``run`` (``fingerprint``: its processes')."""
        return CostRow(
            run=run,
            fingerprint=fingerprint,
            budget_s=budget_s,
            wall_s=wall_s,
            instances=self.instances,
            processes=self.processes,
            forked=forked,
            start_s=self.phases["start"],
            calibration_s=self.phases["calibration"],
            turns_s=self.phases["turns"],
            windows_s=self.windows_s,
            finish_s=self.phases["finish"],
            exit_s=self.phases["exit"],
            breakdown_s=sum(self.breakdown_s),
            breakdowns=len(self.breakdown_s),
            peak_s=self.peak_s,
            parent_s=self.parent_s(wall_s),
            fixed_s_per_process=self.fixed_s_per_process,
        )

    def text(self, wall_s: float) -> str:
        """``time: 612 s, 48 instances, 190 processes: ...`` (the line a run prints)."""
        parts = ", ".join(f"{PHASE_TEXT[name]} {self.phases[name]:.0f} s" for name in PHASES)
        fixed = self.fixed_s_per_process
        per = "" if fixed is None else f"; fixed cost {fixed:.1f} s per measured process (median)"
        apart = (
            f", step breakdowns {sum(self.breakdown_s):.0f} s in {len(self.breakdown_s)} processes"
            if self.breakdown_s
            else ""
        )
        return (
            f"time: {wall_s:.0f} s, {self.instances} group instances, {self.processes} processes: "
            f"{parts} (timed windows {self.windows_s:.0f} s of it){apart}, peak {self.peak_s:.0f} s, "
            f"the parent's own work {self.parent_s(wall_s):.0f} s{per}"
        )
