"""A bisect's result in words (the answer first), its table of steps and its markdown page. Pure:
the caller passes what the journal says (:mod:`harness.analysis.versions.bisect`'s state and where it ended)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.run import render
from harness.analysis.versions import bisect as bs
from harness.analysis.versions.ab import Decision
from harness.analysis.versions.ab_text import ci
from harness.contract.wheels import Wheel
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

VERDICT_WORDS = {
    LOWER: "slower (decided)",
    HIGHER: "faster (decided)",
    EQUIVALENT: "equivalent (inside the band)",
    UNDECIDED: "undecided",
    bs.SLOW: "slow: like the bad build",
    bs.FAST: "fast: like the good build",
}


@dataclass(frozen=True)
class BuildFacts:
    """What a build imported as (None: not installed)."""

    tf_version: str
    git_version: str


@dataclass(frozen=True)
class Context:
    """What the words need besides the state: the cell in words, the held distributions and the
    builds' facts by index."""

    cell: str
    held: str
    facts: Mapping[int, BuildFacts]


def _ratio(d: Decision) -> str:
    """``0.838 (95% CI 0.806 to 0.872, 4 pairs in turns)``."""
    if not math.isfinite(d.ratio):
        return "no ratio"
    ci = f"95% CI {d.low:.3f} to {d.high:.3f}, " if math.isfinite(d.low) else ""
    return f"{d.ratio:.3f} ({ci}{d.pairs} pairs in turns)"


def _name(b: Wheel) -> str:
    return f"{b.spec} ({b.date})"


def _git(i: int, ctx: Context) -> str:
    f = ctx.facts.get(i)
    return f.git_version if f else "?"


def _edge(state: bs.State, lo: int, hi: int, ctx: Context) -> list[str]:
    """What nightlies cannot narrow: a slowdown before the first or after the last nightly."""
    builds, last = state.builds, len(state.builds) - 1
    link = bs.compare_url(_git(lo, ctx), _git(hi, ctx))
    where = f" ({link})" if link else ""
    if lo == 0 and not builds[0].nightly and hi >= 1 and builds[hi].nightly and hi == _first_nightly(state):
        return [
            (
                f"The slowdown is already in the first nightly measured after {builds[0].spec}: the change "
                f"lies among the commits between {builds[0].version}'s release ({_git(0, ctx)}) and that "
                f"nightly ({_git(hi, ctx)}){where}, which includes {builds[0].version}'s own release branch. "
                "Nightlies cannot narrow it further; builds from source at those commits can."
            )
        ]
    if hi == last and not builds[last].nightly and lo >= 1 and builds[lo].nightly:
        return [
            (
                f"The slowdown came after the last nightly measured ({builds[lo].spec}), on "
                f"{builds[last].version}'s release branch ({_git(lo, ctx)} to {_git(last, ctx)}){where}: "
                f"its release candidates ({builds[last].dist}=={builds[last].version}rcN) or source builds "
                "of that branch can narrow it."
            )
        ]
    return []


def _first_nightly(state: bs.State) -> int:
    return next((i for i, b in enumerate(state.builds) if b.nightly and i not in state.skipped), -1)


MORE_PAIRS = "raise --max-pairs and rerun: the same command goes on with the pairs so far"


def _not_finished(state: bs.State, stopped: str) -> list[str]:
    builds, (lo, hi) = state.builds, bs.bounds(state)
    left = len(bs.open_candidates(state))
    return [
        (
            f"Not finished: {stopped}. So far the slowdown lies between {_name(builds[lo])} and "
            f"{_name(builds[hi])}, {left} candidate builds between them (about "
            f"{math.ceil(math.log2(left + 1)) + 1 if left else 1} more steps). Run the same command again "
            "to go on: nothing measured is lost."
        )
    ]


def _no_slowdown(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    d = done.last.decision
    return [
        (
            f"Nothing to bisect: {state.builds[-1].spec} is not slower than {state.builds[0].spec} on "
            f"{ctx.cell} here: it trains at {_ratio(d)} of its speed, {VERDICT_WORDS[d.verdict]}."
        )
    ]


def _failed(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    s = done.last.step
    return [
        (
            f"The bisect stopped: {state.builds[s.b].spec} against {state.builds[s.a].spec} failed: "
            f"{done.last.failure}. Rerun the same command to try that step again."
        )
    ]


def _undecided(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    builds, s, d = state.builds, done.last.step, done.last.decision
    if s.kind is bs.Kind.ENDPOINTS:
        return [
            (
                f"Not decided whether {builds[-1].spec} is slower than {builds[0].spec} on {ctx.cell} "
                f"here: it trains at {_ratio(d)} of its speed. To decide it, {MORE_PAIRS}, on a "
                "quieter machine."
            )
        ]
    line = bs.halfway(bs.endpoints(state).decision.ratio)
    return [
        (
            f"The slowdown lies between {_name(builds[done.lo])} and {_name(builds[done.hi])}, but "
            f"{_name(builds[s.b])} could not be placed: its ratio to {builds[0].spec} ({_ratio(d)}) "
            f"straddles the halfway line {line:.3f}. The slowdown may come in several smaller changes "
            f"(bisect each side with --good and --bad), or need more pairs: {MORE_PAIRS}."
        )
    ]


def _unconfirmed(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    builds, d = state.builds, done.last.decision
    return [
        (
            f"Not confirmed: the bisect narrowed the slowdown to {_name(builds[done.lo])} and "
            f"{_name(builds[done.hi])}, but measured directly the later trains at {_ratio(d)} of the "
            f"earlier's speed, {VERDICT_WORDS[d.verdict]}: the slowdown may be spread over several "
            f"builds, or need more pairs to show between these two: {MORE_PAIRS}."
        ),
        *_commits(state, done, ctx),
    ]


def _found(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    builds, lo, hi, d = state.builds, done.lo, done.hi, done.last.decision
    ends = bs.endpoints(state).decision.ratio
    lines = [
        (
            f"The slowdown came between {_name(builds[lo])} and {_name(builds[hi])}: measured directly, "
            f"the later is {1 - d.ratio:.0%} slower, training at {_ratio(d)} of the earlier's speed: "
            f"{bs.share(d.ratio, ends):.0%} of the slowdown from {builds[0].version} to "
            f"{builds[-1].version} ({ends:.3f})."
        ),
        *_commits(state, done, ctx),
    ]
    skipped = [i for i in range(lo + 1, hi) if i in state.skipped]
    if skipped:
        lines.append(
            f"{len(skipped)} builds between them did not install or import (listed below), so the "
            "change may be in any of them."
        )
    return lines + _edge(state, lo, hi, ctx)


def _commits(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    lo, hi = done.lo, done.hi
    link = bs.compare_url(_git(lo, ctx), _git(hi, ctx))
    return [
        f"TensorFlow's commits between them: {_git(lo, ctx)} to {_git(hi, ctx)}"
        + (f": {link}" if link else ".")
    ]


ENDINGS = {
    bs.Ending.FOUND: _found,
    bs.Ending.UNCONFIRMED: _unconfirmed,
    bs.Ending.NO_SLOWDOWN: _no_slowdown,
    bs.Ending.UNDECIDED: _undecided,
    bs.Ending.FAILED: _failed,
}
"""Outcome -> its words."""


def answer(state: bs.State, done: bs.Done | None, stopped: str, ctx: Context) -> list[str]:
    """The result in words: first what was found (or where it stands), then what it rests on."""
    lines = _not_finished(state, stopped) if done is None else ENDINGS[done.outcome](state, done, ctx)
    return [
        *lines,
        (
            f"Each step is an ab of {ctx.cell} in turns: pairs of fresh processes, one per build, live at "
            "once and taking turns with the whole machine; a ratio is the later build's examples/s over "
            f"the earlier's (below 1: slower). Every build ran with the same {ctx.held}: only the "
            "TensorFlow wheel changed."
        ),
    ]


def table(state: bs.State) -> tuple[list[str], list[list[str]]]:
    """Every step in the order measured, then every build skipped."""
    head = ["step", "build (B)", "date", "against (A)", "B/A", "95% CI", "pairs", "verdict"]
    rows = []
    for n, m in enumerate(state.measured, 1):
        a, b, d = state.builds[m.step.a], state.builds[m.step.b], m.decision
        verdict = f"failed: {m.failure}" if m.failure else VERDICT_WORDS.get(d.verdict, d.verdict)
        ratio = f"{d.ratio:.3f}" if math.isfinite(d.ratio) else "-"
        rows.append([str(n), b.version, b.date, a.version, ratio, ci(d), str(d.pairs), verdict])
    for i, why in state.skipped.items():
        b = state.builds[i]
        rows.append(["-", b.version, b.date, "-", "-", "-", "0", f"skipped: {why}"])
    return head, rows


def markdown(lines: Sequence[str], state: bs.State, figure: str | None) -> str:
    """The bisect's page: the answer, the figure, the table of steps."""
    head, rows = table(state)
    return render.markdown("bisect.md", lines=lines, state=state, figure=figure, head=head, rows=rows)
