"""``python -m harness bisect``'s loop: install the builds each step needs, measure the step as an
``ab`` in turns pair by pair until its rule decides (:mod:`harness.analysis.versions.bisect`), and
journal everything, so that a killed bisect resumes where it stopped (docs/how-to/bisect.md).

The journal (``<results>/bisect/<key>/journal.jsonl``) starts with the plan (builds, cell, rule),
then holds each build ``installed`` or ``skipped``, each ``pair`` as it ends (its ratio B/A, None
when every block was disturbed), each ``step`` as it is decided, and ``end``. A resumed step goes on
from its next pair."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, cast

from harness.analysis.versions import ab
from harness.analysis.versions import bisect as bs
from harness.contract.wheels import Wheel
from harness.errors import HarnessError
from harness.formulas.verdicts import UNDECIDED
from harness.launch.system import forks
from harness.launch.system.platform import HostMachine, this_machine
from harness.launch.versions.ab import AbSide, CellOutcome, Pairs
from harness.launch.versions.builds import BuildError, Held, Installed
from harness.results.journal import Journal, read
from harness.results.store import AB_FOLDER
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.spec.protocol import Protocol as TimingProtocol

FOLDER = "bisect"
"""The bisects' folder under a results root."""
JOURNAL = "journal.jsonl"
MAX_ATTEMPTS = 2
"""A step's pairs may reach this many times ``max_pairs``, counting those with every block disturbed."""


class BisectKey(TypedDict):
    """What makes two commands the same bisect: builds, cell, timing (the protocol's fields but budget)."""

    good: str
    bad: str
    index: str
    nightly: str | None
    cell: str
    timing: dict[str, float]


class StepFields(TypedDict):
    """A journal entry's step: its kind and the indices of the builds it compares."""

    step_kind: str
    a: int
    b: int


class PairEntry(StepFields):
    kind: Literal["pair"]
    pair: int
    order: str
    ratio: float | None
    failure: str
    ab_id: str


class StepEntry(StepFields):
    kind: Literal["step"]
    ratio: float | None
    low: float | None
    high: float | None
    pairs: int
    verdict: str
    failure: str


class InstalledEntry(TypedDict):
    kind: Literal["installed"]
    index: int
    folder: str
    tf_version: str
    git_version: str
    keras_version: str


class SkippedEntry(TypedDict):
    kind: Literal["skipped"]
    index: int
    error: str


class EndEntry(TypedDict):
    kind: Literal["end"]
    outcome: str
    lo: int
    hi: int


Entry = InstalledEntry | SkippedEntry | PairEntry | StepEntry | EndEntry
"""A journal line after the plan."""


@dataclass(frozen=True)
class PairResult:
    """One pair of a step: its ratio B/A (None: every block disturbed) or why it failed."""

    ratio: float | None
    failure: str = ""
    ab_id: str = ""


class Measurer(Protocol):
    """:meth:`step` opens a step of B against A, yielding what measures its pair ``k`` in ``AB`` or ``BA``."""

    def step(
        self, a: Installed, b: Installed
    ) -> AbstractContextManager[Callable[[int, str], PairResult]]: ...


Installer = Callable[[Wheel], Installed]


@dataclass
class Journaled:
    """What a journal says: the state, the builds installed, each step's pair ratios and pairs run,
    and the last ``end`` (outcome, lo, hi)."""

    state: bs.State
    installed: dict[int, Installed] = field(default_factory=dict)
    ratios: dict[bs.Step, list[float]] = field(default_factory=dict)
    pairs_done: dict[bs.Step, int] = field(default_factory=dict)
    ended: tuple[str, int, int] | None = None


def _step(entry: StepFields) -> bs.Step:
    return bs.Step(bs.Kind(entry["step_kind"]), int(entry["a"]), int(entry["b"]))


def replay(lines: Sequence[dict[str, Any]]) -> Journaled:
    """The journal's lines (the plan, then each :data:`Entry`) as what they say; ``pair`` entries
    without their ``step`` entry are a step in progress."""
    builds = tuple(Wheel(**b) for b in lines[0]["builds"])
    skipped: dict[int, str] = {}
    measured: dict[bs.Step, bs.StepResult] = {}
    out = Journaled(bs.State(builds, skipped, ()))
    for e in cast(Sequence[Entry], lines[1:]):
        if e["kind"] == "installed":
            i = int(e["index"])
            out.installed[i] = Installed(
                builds[i], e["folder"], e["tf_version"], e["git_version"], e["keras_version"]
            )
        elif e["kind"] == "skipped":
            skipped[int(e["index"])] = str(e["error"])
        elif e["kind"] == "pair":
            s = _step(e)
            out.pairs_done[s] = out.pairs_done.get(s, 0) + 1
            if (ratio := e.get("ratio")) is not None:
                out.ratios.setdefault(s, []).append(float(ratio))
        elif e["kind"] == "step":
            s = _step(e)
            d = ab.Decision(_nan(e["ratio"]), _nan(e["low"]), _nan(e["high"]), int(e["pairs"]), e["verdict"])
            measured.pop(s, None)  # a step decided again on a rerun: its latest decision
            measured[s] = bs.StepResult(s, d, e.get("failure") or "")
        elif e["kind"] == "end":
            out.ended = (str(e["outcome"]), int(e["lo"]), int(e["hi"]))
    out.state = bs.State(builds, skipped, tuple(measured.values()))
    return out


def _nan_none(x: float) -> float | None:
    return x if x == x else None


def step_entry(m: bs.StepResult) -> StepEntry:
    d, s = m.decision, m.step
    return StepEntry(
        kind="step", step_kind=str(s.kind), a=s.a, b=s.b, ratio=_nan_none(d.ratio), low=_nan_none(d.low),
        high=_nan_none(d.high), pairs=d.pairs, verdict=d.verdict, failure=m.failure,
    )  # fmt: skip


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


@dataclass
class Result:
    """Where a bisect stands when :meth:`Bisect.run` returns: ended (``done``), or stopped by the
    budget (``stopped``)."""

    state: bs.State
    installed: dict[int, Installed]
    done: bs.Done | None = None
    stopped: str = ""


@dataclass(frozen=True)
class Settings:
    """A bisect's fixed settings: its decision rule, its seed and its budget (seconds)."""

    rule: ab.Rule
    seed: int
    budget_s: float


Report = Callable[[str], None]


class Bisect:
    """One bisect, from its journal: :meth:`run` goes on until it ends or the budget is spent. A
    rerun retries the steps :func:`harness.analysis.versions.bisect.reopen` reopens and the builds
    skipped before."""

    def __init__(
        self, journal: Journal, settings: Settings, install: Installer, measurer: Measurer, report: Report
    ) -> None:
        self.journal, self.settings, self.install, self.measurer = journal, settings, install, measurer
        self.report = report
        self.known = replay(read(journal.path))
        s = self.known.state
        self.state = bs.State(s.builds, {}, bs.reopen(s.measured, settings.rule))
        self.started = time.monotonic()

    def _left_s(self) -> float:
        return self.settings.budget_s - (time.monotonic() - self.started)

    def _ensure(self, i: int) -> Installed | None:
        """Build ``i`` installed (cached by the installer; journaled once), or None when it does
        not install or import (journaled, with why)."""
        if i in self.state.skipped:
            return None
        build = self.state.builds[i]
        if i not in self.known.installed:
            self.report(f"installing {build.spec} ({build.date})")
        try:
            inst = self.install(build)
        except BuildError as e:
            if i in (0, len(self.state.builds) - 1):
                raise HarnessError(
                    f"{build.spec} cannot be measured ({e}); the bisect needs it as its "
                    f"{'good' if i == 0 else 'bad'} build. Fix the cause (or choose another) and rerun."
                ) from None
            self.journal.append(SkippedEntry(kind="skipped", index=i, error=str(e)))
            self.state = replace(self.state, skipped={**self.state.skipped, i: str(e)})
            self.report(f"skipped {build.spec}: {e}")
            return None
        if self.known.installed.get(i) != inst:
            self.journal.append(InstalledEntry(
                kind="installed", index=i, folder=inst.folder, tf_version=inst.tf_version,
                git_version=inst.git_version, keras_version=inst.keras_version,
            ))  # fmt: skip
            self.known.installed[i] = inst
        return inst

    def _result(self, done: bs.Done | None = None, stopped: str = "") -> Result:
        return Result(self.state, self.known.installed, done, stopped)

    def run(self) -> Result:
        while True:
            nxt = bs.next_step(self.state)
            if isinstance(nxt, bs.Done):
                end = (str(nxt.outcome), nxt.lo, nxt.hi)
                if self.known.ended != end:
                    self.journal.append(EndEntry(kind="end", outcome=end[0], lo=end[1], hi=end[2]))
                    self.known.ended = end
                return self._result(nxt)
            a, b = self._ensure(nxt.a), self._ensure(nxt.b)
            if a is None or b is None:
                continue  # a midpoint skipped: the next middle candidate instead
            measured = self._measure(nxt, a, b) if self._left_s() > 0 else None
            if measured is None:  # the budget spent, before the step or during it
                return self._result(stopped=f"its budget of {self.settings.budget_s / 60:g} min is spent")
            self.journal.append(step_entry(measured))
            self.state = replace(self.state, measured=(*self.state.measured, measured))

    def _measure(self, step: bs.Step, a: Installed, b: Installed) -> bs.StepResult | None:
        """The step's pairs from where the journal left it until decided, failed or max pairs;
        None when the budget ran out first (the pairs so far are journaled)."""
        rule = self.settings.rule
        ratios = self.known.ratios.setdefault(step, [])  # journaled pairs, then this run's
        done = self.known.pairs_done.get(step, 0)
        seed = self.settings.seed + 1009 * list(bs.Kind).index(step.kind) + step.b  # per kind and build
        orders = ab.pair_orders(max(done, MAX_ATTEMPTS * rule.max_pairs), seed)
        decision = bs.decide(step, ratios, self.state, rule)
        if decision.verdict != UNDECIDED and ratios:
            return bs.StepResult(step, decision)
        last_s = 0.0
        with self.measurer.step(a, b) as pair:
            for k in range(done, len(orders)):
                if len(ratios) >= rule.max_pairs:
                    break
                if self._left_s() < last_s:
                    return None
                t0 = time.monotonic()
                got: PairResult = pair(k, orders[k])
                last_s = time.monotonic() - t0
                self.journal.append(PairEntry(
                    kind="pair", step_kind=str(step.kind), a=step.a, b=step.b, pair=k, order=orders[k],
                    ratio=got.ratio, failure=got.failure, ab_id=got.ab_id,
                ))  # fmt: skip
                self.known.pairs_done[step] = k + 1
                if got.failure:
                    return bs.StepResult(step, bs.decide(step, ratios, self.state, rule), got.failure)
                if got.ratio is not None:
                    ratios.append(got.ratio)
                decision = bs.decide(step, ratios, self.state, rule)
                self.report(_pair_line(step, self.state, k, orders[k], got, decision))
                if decision.verdict != UNDECIDED:
                    break
        return bs.StepResult(step, decision)


def _pair_line(step: bs.Step, state: bs.State, k: int, order: str, got: PairResult, d: ab.Decision) -> str:
    b, a = state.builds[step.b], state.builds[step.a]
    ratio = "every block disturbed" if got.ratio is None else f"{got.ratio:.3f}"
    ci = f"[{d.low:.3f}..{d.high:.3f}]" if d.low == d.low else "[-]"
    return (
        f"  {b.version} / {a.version} pair {k + 1} ({order}): {ratio}; so far {d.ratio:.3f} {ci} {d.verdict}"
    )


class AbMeasurer:
    """Steps measured as ``ab`` in turns by the held interpreter, each build's folder on
    ``PYTHONPATH``; rows under ``<results>/ab``, carrying ``machine`` (default: this host's)."""

    def __init__(
        self,
        cell: Cell,
        protocol: TimingProtocol,
        platform: Platform,
        results: Path,
        held: Held,
        machine: HostMachine | None = None,
    ):
        self.cell, self.protocol, self.platform = cell, protocol, platform
        self.results, self.held = results, held
        self.machine = machine or this_machine()

    @contextmanager
    def step(self, a: Installed, b: Installed) -> Iterator[Callable[[int, str], PairResult]]:
        sides = {"A": AbSide("A", self.held.python, a.env), "B": AbSide("B", self.held.python, b.env)}
        pairs = Pairs(self.results, AB_FOLDER, self.protocol, self.platform, sides, machine=self.machine)

        def pair(k: int, order: str) -> PairResult:
            outcome = CellOutcome(self.cell, "turns")
            pairs.add_pair(outcome, k, order)  # failed: no ratio, and why in outcome.failure
            return PairResult(
                outcome.ratios[0] if outcome.ratios else None, outcome.failure, pairs.run.run_id
            )

        with forks.serving(self.protocol.fork):
            yield pair


def key_of(identity: BisectKey) -> str:
    """A bisect's folder name from what makes it the same bisect (a rerun resumes it)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def folder_of(results: Path, key: str) -> Path:
    return results / FOLDER / key
