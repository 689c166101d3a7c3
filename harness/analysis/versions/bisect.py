"""Bisecting a range of TensorFlow builds for the one that brought a slowdown (``python -m harness
bisect``). Pure: the builds, the steps measured so far and the rule that picks the next step; the
measuring is :mod:`harness.launch.versions.bisect`'s. The rule in words: docs/how-to/bisect.md.

The builds are in order: good (index 0), the candidates (oldest first), bad (last). Every step is
an ``ab`` of one cell in turns, side A the older build: **endpoints**, **midpoints** (between
``lo``, the newest found fast, and ``hi``, the oldest found slow; a build that does not install or
import is skipped) and **final** (``hi`` against ``lo``). A rerun (:func:`reopen`) retries a
failed step and goes on with an undecided one its rule allows more pairs."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from harness.analysis.versions import ab
from harness.contract.wheels import Wheel
from harness.formulas.verdicts import LOWER, UNDECIDED

SLOW = "slow"
"""A midpoint like the bad build: its ratio's CI wholly below the halfway line."""
FAST = "fast"
"""A midpoint like the good build: its ratio's CI wholly above the halfway line."""


class Kind(StrEnum):
    ENDPOINTS = "endpoints"
    MIDPOINT = "midpoint"
    FINAL = "final"


@dataclass(frozen=True)
class Step:
    """One ab: build ``b`` (side B, under test) against build ``a`` (side A), by index."""

    kind: Kind
    a: int
    b: int


@dataclass(frozen=True)
class StepResult:
    """A step's pairs and its decision; ``failure``: why its processes could not be compared."""

    step: Step
    decision: ab.Decision
    failure: str = ""


class Ending(StrEnum):
    FOUND = "found"
    """Two consecutive builds, the slowdown between them."""
    NO_SLOWDOWN = "no slowdown"
    """The bad build is decided equivalent to the good one, or faster."""
    UNDECIDED = "undecided"
    """The endpoints' or a midpoint's step ended undecided."""
    UNCONFIRMED = "not confirmed"
    """The final step did not decide the two builds left apart."""
    FAILED = "failed"
    """A step's processes failed (its ``failure`` says why)."""


@dataclass(frozen=True)
class Done:
    """Where the bisect ended: the builds it narrowed the slowdown to (``lo`` fast, ``hi`` slow,
    by index) and the step that says so (``last``)."""

    outcome: Ending
    lo: int
    hi: int
    last: StepResult


@dataclass(frozen=True)
class State:
    """What is known: the builds, those skipped (index -> why) and the steps measured, in order."""

    builds: tuple[Wheel, ...]
    skipped: Mapping[int, str]
    measured: tuple[StepResult, ...]


def halfway(endpoints_ratio: float) -> float:
    """The line between like-good and like-bad: the geometric mean of 1 and the endpoints' ratio."""
    return math.sqrt(endpoints_ratio)


def classify(ratios: Sequence[float], threshold: float, rule: ab.Rule) -> ab.Decision:
    """A midpoint's decision on its pair ratios so far (B/A, A the good build): :data:`SLOW`,
    :data:`FAST` or undecided (module doc, step 2), from ``rule.min_pairs`` pairs on."""
    d = ab.decide(ratios, rule)
    verdict = UNDECIDED
    if d.pairs >= rule.min_pairs and math.isfinite(d.low) and math.isfinite(d.high):
        verdict = SLOW if d.high < threshold else FAST if d.low > threshold else UNDECIDED
    return ab.Decision(d.ratio, d.low, d.high, d.pairs, verdict)


def decide(step: Step, ratios: Sequence[float], state: State, rule: ab.Rule) -> ab.Decision:
    """A step's decision on its pair ratios so far: ab's rule for the endpoints and the final
    step, :func:`classify` against the halfway line for a midpoint."""
    if step.kind is Kind.MIDPOINT:
        return classify(ratios, halfway(endpoints(state).decision.ratio), rule)
    return ab.decide(ratios, rule)


def endpoints(state: State) -> StepResult:
    """The endpoints' step (the caller checks it was measured)."""
    return next(m for m in state.measured if m.step.kind is Kind.ENDPOINTS)


def bounds(state: State) -> tuple[int, int]:
    """``(lo, hi)``: the newest build known fast and the oldest known slow, by index (at first the
    good and the bad build)."""
    lo, hi = 0, len(state.builds) - 1
    for m in state.measured:
        if m.step.kind is Kind.MIDPOINT and not m.failure:
            if m.decision.verdict == SLOW:
                hi = min(hi, m.step.b)
            elif m.decision.verdict == FAST:
                lo = max(lo, m.step.b)
    return lo, hi


def open_candidates(state: State) -> list[int]:
    """The candidates still to bisect: between ``lo`` and ``hi``, not skipped."""
    lo, hi = bounds(state)
    return [i for i in range(lo + 1, hi) if i not in state.skipped]


def next_step(state: State) -> Step | Done:
    """The next step to measure, or where the bisect ended (module doc)."""
    last = len(state.builds) - 1
    ends = [m for m in state.measured if m.step.kind is Kind.ENDPOINTS]
    if not ends:
        return Step(Kind.ENDPOINTS, 0, last)
    end = ends[0]
    if end.failure or end.decision.verdict != LOWER:
        return Done(_ended(end), 0, last, end)
    for m in state.measured:
        if m.step.kind is Kind.MIDPOINT and (m.failure or m.decision.verdict == UNDECIDED):
            lo, hi = bounds(state)
            return Done(Ending.FAILED if m.failure else Ending.UNDECIDED, lo, hi, m)
    candidates = open_candidates(state)
    if candidates:
        return Step(Kind.MIDPOINT, 0, candidates[len(candidates) // 2])
    lo, hi = bounds(state)
    if (lo, hi) == (0, last):
        return Done(Ending.FOUND, lo, hi, end)
    final = next((m for m in state.measured if m.step == Step(Kind.FINAL, lo, hi)), None)
    if final is None:
        return Step(Kind.FINAL, lo, hi)
    if final.failure:
        return Done(Ending.FAILED, lo, hi, final)
    return Done(Ending.FOUND if final.decision.verdict == LOWER else Ending.UNCONFIRMED, lo, hi, final)


def _ended(end: StepResult) -> Ending:
    """How endpoints that are not a decided slowdown end the bisect."""
    if end.failure:
        return Ending.FAILED
    return Ending.UNDECIDED if end.decision.verdict == UNDECIDED else Ending.NO_SLOWDOWN


def reopen(measured: Sequence[StepResult], rule: ab.Rule) -> tuple[StepResult, ...]:
    """The steps a rerun keeps as measured: a failed step is tried again, and an undecided one goes
    on when ``rule`` allows more pairs than it had (a rerun with a higher ``--max-pairs``)."""
    return tuple(
        m
        for m in measured
        if not m.failure and not (m.decision.verdict == UNDECIDED and m.decision.pairs < rule.max_pairs)
    )


def share(final_ratio: float, endpoints_ratio: float) -> float:
    """The share of the endpoints' slowdown that the final step's accounts for (log ratios: 1.0
    all of it)."""
    return math.log(final_ratio) / math.log(endpoints_ratio)


def steps_expected(candidates: int) -> int:
    """About how many steps a bisect of ``candidates`` builds takes: the endpoints, ceil(log2(N +
    1)) midpoints and the final step."""
    return 2 + math.ceil(math.log2(candidates + 1)) if candidates else 1


GIT_HASH = re.compile(r"-g([0-9a-f]{7,40})$")


def commit(git_version: str) -> str | None:
    """The commit hash in a ``tf.version.GIT_VERSION`` (``v1.12.1-12345-gabcdef012``), or None
    where it names none (a tag alone, ``unknown``)."""
    m = GIT_HASH.search(git_version.strip())
    return m.group(1) if m else None


def compare_url(old: str, new: str) -> str | None:
    """The commits between two builds on GitHub, from their GIT_VERSIONs (None: a hash missing)."""
    a, b = commit(old), commit(new)
    if a is None or b is None:
        return None
    return f"https://github.com/tensorflow/tensorflow/compare/{a}...{b}"
