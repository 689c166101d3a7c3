"""A bisect's result in words (the answer first), its table of steps and its markdown page. Pure:
the caller passes what the journal says (:mod:`harness.analysis.bisect`'s state and where it ended)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis import bisect as bs
from harness.analysis.ab import Decision
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

VERDICT_WORDS = {
    LOWER: "slower (decided)",
    HIGHER: "faster (decided)",
    EQUIVALENT: "equivalent (inside the band)",
    UNDECIDED: "undecided",
    bs.SLOW: "slow: like the bad build",
    bs.FAST: "fast: like the good build",
}
KIND_WORDS = {
    bs.Kind.ENDPOINTS: "the bad build against the good one",
    bs.Kind.MIDPOINT: "a midpoint against the good build",
    bs.Kind.FINAL: "the two builds it ended on, directly",
}


@dataclass(frozen=True)
class BuildFacts:
    """What a build imported as (None: not installed)."""

    tf_version: str
    git_version: str


@dataclass(frozen=True)
class Context:
    """What the words need besides the state: the cell in words, the rule's band, the held
    distributions and the builds' facts by index."""

    cell: str
    min_effect: float
    held: str
    facts: Mapping[int, BuildFacts]


def _ratio(d: Decision) -> str:
    if not math.isfinite(d.ratio):
        return "no ratio"
    ci = f", 95% CI {d.low:.3f} to {d.high:.3f}" if math.isfinite(d.low) else ""
    return f"{d.ratio:.3f}{ci}, {d.pairs} pairs in turns"


def _name(b: bs.Build) -> str:
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


def _skipped_between(state: bs.State, lo: int, hi: int) -> list[int]:
    return [i for i in range(lo + 1, hi) if i in state.skipped]


def answer(state: bs.State, done: bs.Done | None, stopped: str, ctx: Context) -> list[str]:
    """The result in words, first what was found, then what it rests on."""
    builds = state.builds
    good, bad = builds[0], builds[-1]
    lines: list[str] = []
    if done is None:
        lo, hi = bs.bounds(state)
        left = len(bs.open_candidates(state))
        lines.append(
            f"Not finished: {stopped}. So far the slowdown lies between "
            f"{_name(builds[lo])} and {_name(builds[hi])}, {left} candidate builds between them "
            f"(about {math.ceil(math.log2(left + 1)) + 1 if left else 1} more steps). Run the same "
            "command again to go on: nothing measured is lost."
        )
    elif done.outcome is bs.Outcome.NO_SLOWDOWN:
        lines.append(
            f"Nothing to bisect: {bad.spec} is not decided slower than {good.spec} on {ctx.cell} "
            f"here: {_ratio(done.last.decision)}, {VERDICT_WORDS[done.last.decision.verdict]}."
        )
    elif done.outcome is bs.Outcome.FAILED:
        s = done.last.step
        lines.append(
            f"The bisect stopped: {builds[s.b].spec} against {builds[s.a].spec} failed: {done.last.failure}"
        )
    elif done.outcome is bs.Outcome.UNDECIDED:
        s, d = done.last.step, done.last.decision
        line = bs.halfway(bs.endpoints(state).decision.ratio)
        lines.append(
            f"The slowdown lies between {_name(builds[done.lo])} and {_name(builds[done.hi])}, but "
            f"{_name(builds[s.b])} could not be placed: its ratio to {good.spec} ({_ratio(d)}) "
            f"straddles the halfway line {line:.3f}. The slowdown may come in several smaller "
            "changes, or need more pairs (--max-pairs); bisect each side with --good and --bad."
        )
    else:
        lines += _found(state, done, ctx)
    lines.append(
        f"Each step is an ab of {ctx.cell} in turns: pairs of fresh processes, one per build, live at "
        "once and taking turns with the whole machine; a ratio is the later build's examples/s over "
        f"the earlier's (below 1: slower). Every build ran with the same {ctx.held}: only the "
        "TensorFlow wheel changed."
    )
    return lines


def _found(state: bs.State, done: bs.Done, ctx: Context) -> list[str]:
    builds, lo, hi, d = state.builds, done.lo, done.hi, done.last.decision
    lines = [
        (
            f"The slowdown came between {_name(builds[lo])} and {_name(builds[hi])}: measured directly, "
            f"the later trains at {_ratio(d)} of the earlier's speed: {VERDICT_WORDS[d.verdict]}."
        )
    ]
    if d.verdict != LOWER:
        lines.append(
            "Measured directly the two are not decided apart: the slowdown may be spread over "
            "several builds, each too small to decide alone."
        )
    link = bs.compare_url(_git(lo, ctx), _git(hi, ctx))
    lines.append(
        f"TensorFlow's commits between them: {_git(lo, ctx)} to {_git(hi, ctx)}"
        + (f": {link}" if link else ".")
    )
    skipped = _skipped_between(state, lo, hi)
    if skipped:
        lines.append(
            f"{len(skipped)} builds between them did not install or import (listed below), so the "
            "change may be in any of them."
        )
    return lines + _edge(state, lo, hi, ctx)


def table(state: bs.State) -> tuple[list[str], list[list[str]]]:
    """Every step in the order measured, then every build skipped."""
    head = ["step", "build (B)", "date", "against (A)", "B/A", "95% CI", "pairs", "verdict"]
    rows = []
    for n, m in enumerate(state.measured, 1):
        a, b, d = state.builds[m.step.a], state.builds[m.step.b], m.decision
        ci = f"{d.low:.3f}..{d.high:.3f}" if math.isfinite(d.low) else "-"
        verdict = f"failed: {m.failure}" if m.failure else VERDICT_WORDS.get(d.verdict, d.verdict)
        ratio = f"{d.ratio:.3f}" if math.isfinite(d.ratio) else "-"
        rows.append([str(n), b.version, b.date, a.version, ratio, ci, str(d.pairs), verdict])
    for i, why in state.skipped.items():
        b = state.builds[i]
        rows.append(["-", b.version, b.date, "-", "-", "-", "0", f"skipped: {why}"])
    return head, rows


def markdown(lines: Sequence[str], state: bs.State, figure: str | None) -> str:
    """The bisect's page: the answer, the figure, the table of steps."""
    head, rows = table(state)
    out = [
        "# Bisect: " + f"{state.builds[0].spec} to {state.builds[-1].spec}",
        "",
        *[f"{x}\n" for x in lines],
    ]
    if figure:
        out += [f"![ratio against build date]({figure})", ""]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"
