"""The bisect's rule (which step next, when it ends) and its words, on hand-made states."""

from __future__ import annotations

import math

import pytest

from harness.analysis.versions import ab
from harness.analysis.versions import bisect as bs
from harness.analysis.versions.bisect_text import BuildFacts, Context, answer, markdown, table
from harness.contract.wheels import Wheel
from harness.formulas.verdicts import EQUIVALENT, LOWER, UNDECIDED

RULE = ab.Rule(min_effect=0.02, min_pairs=4, max_pairs=12)


def builds(n: int) -> tuple[Wheel, ...]:
    nightlies = [
        Wheel("tf-nightly-cpu", f"2.21.0.dev202510{i + 1:02d}", f"2025-10-{i + 1:02d}") for i in range(n)
    ]
    return (
        Wheel("tensorflow-cpu", "2.20.0", "2025-08-13"),
        *nightlies,
        Wheel("tensorflow-cpu", "2.21.0", "2026-03-06"),
    )


def decision(ratio: float, verdict: str, half: float = 0.01, pairs: int = 5) -> ab.Decision:
    return ab.Decision(ratio, ratio - half, ratio + half, pairs, verdict)


def measured(kind: bs.Kind, a: int, b: int, ratio: float, verdict: str) -> bs.StepResult:
    return bs.StepResult(bs.Step(kind, a, b), decision(ratio, verdict))


def state(n: int, *steps: bs.StepResult, skipped: dict[int, str] | None = None) -> bs.State:
    return bs.State(builds(n), skipped or {}, steps)


ENDS = measured(bs.Kind.ENDPOINTS, 0, 8, 0.81, LOWER)


def test_the_first_step_measures_the_endpoints() -> None:
    assert bs.next_step(state(7)) == bs.Step(bs.Kind.ENDPOINTS, 0, 8)


@pytest.mark.parametrize(
    "verdict, outcome",
    [
        (EQUIVALENT, bs.Ending.NO_SLOWDOWN),
        ("higher", bs.Ending.NO_SLOWDOWN),
        (UNDECIDED, bs.Ending.UNDECIDED),
    ],
)
def test_only_a_decided_slowdown_is_bisected(verdict: str, outcome: bs.Ending) -> None:
    done = bs.next_step(state(7, measured(bs.Kind.ENDPOINTS, 0, 8, 0.99, verdict)))
    assert isinstance(done, bs.Done) and done.outcome is outcome


def test_midpoints_halve_the_open_range_against_the_good_build() -> None:
    s = state(7, ENDS)
    assert bs.next_step(s) == bs.Step(bs.Kind.MIDPOINT, 0, 4)
    s = state(7, ENDS, measured(bs.Kind.MIDPOINT, 0, 4, 0.80, bs.SLOW))
    assert bs.bounds(s) == (0, 4) and bs.next_step(s) == bs.Step(bs.Kind.MIDPOINT, 0, 2)
    s = state(
        7,
        ENDS,
        measured(bs.Kind.MIDPOINT, 0, 4, 0.80, bs.SLOW),
        measured(bs.Kind.MIDPOINT, 0, 2, 1.0, bs.FAST),
    )
    assert bs.next_step(s) == bs.Step(bs.Kind.MIDPOINT, 0, 3)


def test_consecutive_builds_end_with_a_direct_final_step() -> None:
    s = state(
        7,
        ENDS,
        measured(bs.Kind.MIDPOINT, 0, 4, 0.8, bs.SLOW),
        measured(bs.Kind.MIDPOINT, 0, 3, 1.0, bs.FAST),
    )
    assert bs.next_step(s) == bs.Step(bs.Kind.FINAL, 3, 4)
    final = measured(bs.Kind.FINAL, 3, 4, 0.81, LOWER)
    done = bs.next_step(bs.State(s.builds, {}, (*s.measured, final)))
    assert done == bs.Done(bs.Ending.FOUND, 3, 4, final)


@pytest.mark.parametrize("verdict", [EQUIVALENT, UNDECIDED, "higher"])
def test_a_final_step_that_is_not_a_decided_slowdown_does_not_confirm(verdict: str) -> None:
    s = state(7, ENDS, measured(bs.Kind.MIDPOINT, 0, 4, 0.8, bs.SLOW), measured(bs.Kind.MIDPOINT, 0, 3, 1.0, bs.FAST),
              measured(bs.Kind.FINAL, 3, 4, 0.99, verdict))  # fmt: skip
    done = bs.next_step(s)
    assert isinstance(done, bs.Done) and done.outcome is bs.Ending.UNCONFIRMED
    assert answer(s, done, "", CTX)[0].startswith("Not confirmed: ")


def test_a_rerun_retries_a_failed_step_and_goes_on_with_an_undecided_one_given_more_pairs() -> None:
    failed = bs.StepResult(bs.Step(bs.Kind.MIDPOINT, 0, 4), decision(0.9, UNDECIDED), "out of memory")
    und = measured(bs.Kind.MIDPOINT, 0, 2, 0.9, UNDECIDED)  # 5 pairs
    assert bs.reopen((ENDS, failed, und), RULE) == (ENDS,)  # RULE allows 12
    assert bs.reopen((ENDS, und), ab.Rule(max_pairs=5)) == (ENDS, und)


def test_a_skipped_build_is_passed_over() -> None:
    assert bs.next_step(state(7, ENDS, skipped={4: "no wheel"})) in (
        bs.Step(bs.Kind.MIDPOINT, 0, 3),
        bs.Step(bs.Kind.MIDPOINT, 0, 5),
    )
    s = state(1, measured(bs.Kind.ENDPOINTS, 0, 2, 0.8, LOWER), skipped={1: "no wheel"})
    done = bs.next_step(s)
    assert isinstance(done, bs.Done) and (done.lo, done.hi) == (0, 2) and done.outcome is bs.Ending.FOUND


def test_an_undecided_midpoint_ends_the_bisect_there() -> None:
    und = measured(bs.Kind.MIDPOINT, 0, 4, 0.9, UNDECIDED)
    done = bs.next_step(state(7, ENDS, und))
    assert isinstance(done, bs.Done) and done.outcome is bs.Ending.UNDECIDED and done.last == und


def test_classify_against_the_halfway_line() -> None:
    line = bs.halfway(0.81)
    assert line == pytest.approx(0.9)
    assert bs.classify([0.80, 0.82, 0.81, 0.79], line, RULE).verdict == bs.SLOW
    assert bs.classify([1.0, 0.99, 1.01, 1.0], line, RULE).verdict == bs.FAST
    assert bs.classify([1.0, 0.99, 1.01], line, RULE).verdict == UNDECIDED  # fewer than min_pairs
    assert bs.classify([0.8, 1.0, 0.82, 1.0], line, RULE).verdict == UNDECIDED  # straddles


@pytest.mark.parametrize("n, steps", [(0, 1), (1, 3), (7, 5), (108, 9)])
def test_steps_expected(n: int, steps: int) -> None:
    assert bs.steps_expected(n) == steps


def test_commit_and_compare_link_from_git_versions() -> None:
    assert bs.commit("v2.20.0-rc0-4-g72fbba3d20f") == "72fbba3d20f"
    assert bs.commit("unknown") is None
    assert bs.compare_url("v1.12.1-1-gaaaaaaa", "v1.12.1-9-gbbbbbbb") == (
        "https://github.com/tensorflow/tensorflow/compare/aaaaaaa...bbbbbbb"
    )


CTX = Context("MirroredStrategy on 2 replicas (dense)", "keras==3.15.1, numpy==2.4.6",
              {i: BuildFacts("x", f"v1.12.1-{i}-gabc{i:04d}") for i in range(9)})  # fmt: skip


def test_the_answer_names_the_two_builds_their_ratio_and_the_commits_first() -> None:
    s = state(7, ENDS, measured(bs.Kind.MIDPOINT, 0, 4, 0.8, bs.SLOW), measured(bs.Kind.MIDPOINT, 0, 3, 1.0, bs.FAST),
              measured(bs.Kind.FINAL, 3, 4, 0.81, LOWER))  # fmt: skip
    done = bs.next_step(s)
    assert isinstance(done, bs.Done)
    lines = answer(s, done, "", CTX)
    assert lines[0].startswith(
        "The slowdown came between tf-nightly-cpu==2.21.0.dev20251003 (2025-10-03) and "
    )
    assert "19% slower, training at 0.810 (95% CI 0.800 to 0.820, 5 pairs in turns)" in lines[0]
    assert "100% of the slowdown from 2.20.0 to 2.21.0 (0.810)" in lines[0]
    assert "compare/abc0003...abc0004" in lines[1]
    assert "keras==3.15.1" in lines[-1]
    _head, rows = table(s)
    assert len(rows) == 4 and rows[-1][-1] == "slower (decided)"
    assert "| step |" in markdown(lines, s, "ratio-by-date.png")


def test_a_slowdown_already_in_the_first_nightly_is_said_so() -> None:
    s = state(7, ENDS, *(measured(bs.Kind.MIDPOINT, 0, i, 0.8, bs.SLOW) for i in (4, 2, 1)),
              measured(bs.Kind.FINAL, 0, 1, 0.8, LOWER))  # fmt: skip
    done = bs.next_step(s)
    assert isinstance(done, bs.Done) and (done.lo, done.hi) == (0, 1)
    assert any("already in the first nightly" in line for line in answer(s, done, "", CTX))


def test_a_slowdown_after_the_last_nightly_points_at_the_release_branch() -> None:
    s = state(7, ENDS, *(measured(bs.Kind.MIDPOINT, 0, i, 1.0, bs.FAST) for i in (4, 6, 7)),
              measured(bs.Kind.FINAL, 7, 8, 0.8, LOWER))  # fmt: skip
    done = bs.next_step(s)
    assert isinstance(done, bs.Done) and (done.lo, done.hi) == (7, 8)
    assert any("release branch" in line and "rcN" in line for line in answer(s, done, "", CTX))


def test_a_stopped_bisect_says_where_it_stands_and_how_to_go_on() -> None:
    s = state(7, ENDS, measured(bs.Kind.MIDPOINT, 0, 4, 0.8, bs.SLOW))
    line = answer(s, None, "its budget of 5 min is spent", CTX)[0]
    assert line.startswith("Not finished: its budget of 5 min is spent.")
    assert "3 candidate builds" in line and "same command again" in line
    assert not math.isnan(bs.halfway(0.81))
