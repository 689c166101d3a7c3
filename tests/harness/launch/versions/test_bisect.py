"""The bisect's loop on a fake index: fake builds, a fake installer and a fake measurer whose pair
ratios come from a planted slowdown (no TensorFlow, no process)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.analysis.versions import ab
from harness.analysis.versions import bisect as bs
from harness.contract.wheels import Wheel
from harness.errors import HarnessError
from harness.launch.versions import bisect as lb
from harness.launch.versions.builds import BuildError, Installed
from harness.results.journal import Journal, read

SLOWDOWN = 0.85
"""The planted slowdown: builds from the bad one on train at this share of the good ones' speed."""


def fake_builds(n: int) -> list[Wheel]:
    nightlies = [
        Wheel("tf-nightly-cpu", f"2.21.0.dev2025{1001 + i:04d}", f"2025-10-{1 + i % 28:02d}")
        for i in range(n)
    ]
    return [
        Wheel("tensorflow-cpu", "2.20.0", "2025-08-13"),
        *nightlies,
        Wheel("tensorflow-cpu", "2.21.0", "2026-03-01"),
    ]


class FakeMeasurer:
    """Pair ratios of B over A: each build's speed (1, or SLOWDOWN from build ``bad_from`` on),
    times lognormal noise of ``sd``; counts the pairs measured; raises KeyboardInterrupt (a kill)
    at pair number ``kill_at`` overall."""

    def __init__(self, bad_from: int, sd: float = 0.02, kill_at: int | None = None, seed: int = 1) -> None:
        self.bad_from, self.sd, self.kill_at = bad_from, sd, kill_at
        self.rng = random.Random(seed)
        self.pairs = 0
        self.steps: list[tuple[int, int]] = []

    def speed(self, inst: Installed) -> float:
        return SLOWDOWN if int(inst.folder) >= self.bad_from else 1.0

    @contextmanager
    def step(self, a: Installed, b: Installed) -> Iterator[Callable[[int, str], lb.PairResult]]:
        self.steps.append((a.folder, b.folder))

        def pair(k: int, order: str) -> lb.PairResult:
            if self.kill_at is not None and self.pairs == self.kill_at:
                raise KeyboardInterrupt
            self.pairs += 1
            noise = math.exp(self.rng.gauss(0, self.sd))
            return lb.PairResult(self.speed(b) / self.speed(a) * noise, "", "ab-fake")

        yield pair


def installer(
    builds: list[Wheel],
    broken: set[int] = frozenset(),
    calls: list[int] | None = None,
):  # type: ignore[assignment]
    def install(build: Wheel) -> Installed:
        i = builds.index(build)
        if calls is not None:
            calls.append(i)
        if i in broken:
            raise BuildError(f"pip {build.spec}: exited 1: no matching distribution")
        return Installed(build, str(i), build.version, f"v1.12.1-{i}-gabc{i:04d}", "3.15.1")

    return install


SETTINGS = lb.Settings(ab.Rule(min_effect=0.02, min_pairs=4, max_pairs=12), seed=0, budget_s=3600)


def journal(tmp_path: Path, builds: list[Wheel]) -> Path:
    path = tmp_path / "bisect" / "k" / lb.JOURNAL
    Journal.create(path, {"builds": [asdict(b) for b in builds]}).close()
    return path


def run(path: Path, builds, measurer, **kw) -> lb.Result:  # type: ignore[no-untyped-def]
    with Journal.reopen(path) as j:
        return lb.Bisect(
            j, kw.pop("settings", SETTINGS), installer(builds, **kw), measurer, lambda s: None
        ).run()


@pytest.mark.parametrize("bad_from", [1, 7, 23, 60, 108, 109])
def test_a_planted_slowdown_is_found_in_about_log2_steps(tmp_path: Path, bad_from: int) -> None:
    builds = fake_builds(108)
    m = FakeMeasurer(bad_from)
    result = run(journal(tmp_path, builds), builds, m)
    assert result.done is not None and result.done.outcome is bs.Ending.FOUND
    assert (result.done.lo, result.done.hi) == (bad_from - 1, bad_from)
    midpoints = [s for s in result.state.measured if s.step.kind is bs.Kind.MIDPOINT]
    assert len(midpoints) <= math.ceil(math.log2(109))
    assert result.done.last.decision.verdict == "lower"


def test_a_build_that_will_not_install_is_skipped_and_named(tmp_path: Path) -> None:
    builds = fake_builds(30)
    m = FakeMeasurer(bad_from=16)
    result = run(journal(tmp_path, builds), builds, m, broken={15, 16})
    assert result.done is not None and result.done.outcome is bs.Ending.FOUND
    assert set(result.state.skipped) <= {15, 16} and result.state.skipped
    assert "no matching distribution" in next(iter(result.state.skipped.values()))
    assert result.done.lo < 16 <= result.done.hi


def test_a_killed_bisect_resumes_without_measuring_again(tmp_path: Path) -> None:
    builds = fake_builds(40)
    path = journal(tmp_path, builds)
    killed = FakeMeasurer(bad_from=25, kill_at=13)
    with pytest.raises(KeyboardInterrupt):
        run(path, builds, killed)
    pairs_before = sum(1 for e in read(path) if e["kind"] == "pair")
    assert pairs_before == 13
    calls: list[int] = []
    again = FakeMeasurer(bad_from=25, seed=2)
    result = run(path, builds, again, calls=calls)
    assert result.done is not None and (result.done.lo, result.done.hi) == (24, 25)
    installs = [e["index"] for e in read(path) if e["kind"] == "installed"]
    assert len(installs) == len(set(installs))  # each build journaled installed once
    # nothing measured again: the resumed run's pairs plus the killed one's make the journal's
    assert sum(1 for e in read(path) if e["kind"] == "pair") == pairs_before + again.pairs
    # the step in progress went on from its next pair, not from its first
    first = [e for e in read(path) if e["kind"] == "pair"]
    keys = [(e["step_kind"], e["a"], e["b"], e["pair"]) for e in first]
    assert len(keys) == len(set(keys))


def test_no_slowdown_between_the_endpoints_ends_at_once(tmp_path: Path) -> None:
    builds = fake_builds(10)
    m = FakeMeasurer(bad_from=99)
    result = run(journal(tmp_path, builds), builds, m)
    assert result.done is not None and result.done.outcome is bs.Ending.NO_SLOWDOWN
    assert m.steps == [("0", "11")]


def test_a_bad_endpoint_that_will_not_install_is_an_error(tmp_path: Path) -> None:
    builds = fake_builds(4)
    with pytest.raises(HarnessError, match="bad build"):
        run(journal(tmp_path, builds), builds, FakeMeasurer(2), broken={5})


def test_the_budget_stops_it_and_the_rerun_goes_on(tmp_path: Path) -> None:
    builds = fake_builds(20)
    path = journal(tmp_path, builds)
    short = lb.Settings(SETTINGS.rule, 0, budget_s=0.0)
    result = run(path, builds, FakeMeasurer(9), settings=short)
    assert result.done is None and "budget" in result.stopped
    result = run(path, builds, FakeMeasurer(9))
    assert result.done is not None and (result.done.lo, result.done.hi) == (8, 9)


def test_replay_gives_back_a_failed_step_without_a_ratio_and_the_pairs_in_progress(tmp_path: Path) -> None:
    builds = fake_builds(3)
    plan = {"kind": "plan", "builds": [asdict(b) for b in builds]}
    ends = {"step_kind": "endpoints", "a": 0, "b": 4}
    mid = {"step_kind": "midpoint", "a": 0, "b": 2}
    entries = [
        plan,
        {
            "kind": "step",
            **ends,
            "ratio": 0.8,
            "low": 0.79,
            "high": 0.81,
            "pairs": 5,
            "verdict": "lower",
            "failure": "",
        },
        {"kind": "pair", **mid, "pair": 0, "order": "AB", "ratio": 0.81},
        {"kind": "pair", **mid, "pair": 1, "order": "BA", "ratio": None},
        {"kind": "skipped", "index": 1, "error": "no wheel"},
    ]
    known = lb.replay(entries)
    step = bs.Step(bs.Kind.MIDPOINT, 0, 2)
    assert known.ratios[step] == [0.81] and known.pairs_done[step] == 2
    assert known.state.skipped == {1: "no wheel"} and not known.ended
    failed = {"kind": "step", **mid, "ratio": None, "low": None, "high": None, "pairs": 0, "verdict": "undecided",
              "failure": "side B, pair 2: failed: out of memory"}  # fmt: skip
    known = lb.replay([*entries, failed])
    m = known.state.measured[-1]
    assert math.isnan(m.decision.ratio) and m.failure.endswith("out of memory")
    done = bs.next_step(known.state)
    assert isinstance(done, bs.Done) and done.outcome is bs.Ending.FAILED


def test_a_rerun_retries_a_failed_step_and_a_skipped_build(tmp_path: Path) -> None:
    builds = fake_builds(14)
    path = journal(tmp_path, builds)

    class Failing(FakeMeasurer):
        @contextmanager
        def step(self, a: Installed, b: Installed) -> Iterator[Callable[[int, str], lb.PairResult]]:
            with super().step(a, b) as pair:
                yield lambda k, order: pair(k, order) if b.build != builds[7] else lb.PairResult(None, "oom")

    first = run(path, builds, Failing(bad_from=5), broken={8})  # 8 skipped, then 7 fails
    assert (
        first.done is not None and first.done.outcome is bs.Ending.FAILED and first.done.last.failure == "oom"
    )
    again = run(path, builds, FakeMeasurer(bad_from=5))
    assert again.done is not None and again.done.outcome is bs.Ending.FOUND
    assert (again.done.lo, again.done.hi) == (4, 5)
    entries = read(path)
    assert [e["outcome"] for e in entries if e["kind"] == "end"] == ["failed", "found"]
    assert [e["kind"] for e in entries if e.get("index") == 8] == ["skipped", "installed"]
