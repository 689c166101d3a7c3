"""``bisect`` from its command line, in this process, on a fake index (a folder of stub wheels):
the dry run, and a bisect that has ended printing its result again (nothing installed or started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis.versions import ab
from harness.analysis.versions import bisect as bs
from harness.commands import bisect as command
from harness.commands import build_parser, main
from harness.launch.versions.bisect import JOURNAL, folder_of, key_of, step_entry
from harness.results.journal import Journal
from tests.harness.launch.versions.test_builds import wheel

CELL = ["--model", "dense", "--strategy", "mirrored", "--replicas", "2", "--batch", "64"]
NIGHTLIES = ("20250818", "20250901", "20251002", "20251101", "20251202", "20260115", "20260203")


@pytest.fixture
def argv(tmp_path: Path) -> list[str]:
    index = tmp_path / "index"
    index.mkdir()
    for v in ("2.20.0", "2.21.0"):
        wheel(index, "tensorflow-cpu", v)
    for i, day in enumerate(NIGHTLIES):
        wheel(index, "tf-nightly-cpu", f"2.21.0.dev{day}", i)
    return ["bisect", "--good", "tensorflow-cpu==2.20.*", "--bad", "tensorflow-cpu==2.21.*", *CELL,
            "--index", str(index), "--results", str(tmp_path / "results"), "--envs", str(tmp_path / "envs")]  # fmt: skip


def test_the_dry_run_lists_the_builds_between_and_starts_nothing(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "7 tf-nightly-cpu builds between; about 5 steps" in out
    assert "tf-nightly-cpu==2.21.0.dev20251002  2025-10-02" in out
    assert out.rstrip().endswith("dry run: nothing started.")
    assert not (tmp_path / "results").exists() and not (tmp_path / "envs").exists()


def test_one_cell_only(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv[:5], "--model", "dense,cnn", "--strategy", "default", "--dry-run"]) == 2
    assert "with 2 cells that run here" in capsys.readouterr().err


def measured(kind: bs.Kind, a: int, b: int, ratio: float, verdict: str) -> bs.StepResult:
    return bs.StepResult(bs.Step(kind, a, b), ab.Decision(ratio, ratio - 0.01, ratio + 0.01, 5, verdict))


def test_an_ended_bisect_prints_its_result_again(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(argv)
    p = command.plan(args)
    plan_line = command._new_plan(p)
    folder = folder_of(Path(args.results), key_of(p.identity()))
    steps = [
        measured(bs.Kind.ENDPOINTS, 0, 8, 0.82, "lower"),
        measured(bs.Kind.MIDPOINT, 0, 4, 1.0, bs.FAST),
        measured(bs.Kind.MIDPOINT, 0, 6, 0.82, bs.SLOW),
        measured(bs.Kind.MIDPOINT, 0, 5, 0.83, bs.SLOW),
        measured(bs.Kind.FINAL, 4, 5, 0.81, "lower"),
    ]
    with Journal.create(folder / JOURNAL, {**plan_line, "held": "keras==3.15.1"}) as j:
        for i in (0, 4, 5, 6, 8):
            j.append({"kind": "installed", "index": i, "folder": str(i), "tf_version": "x",
                      "git_version": f"v1.12.1-{i}-gabc{i:04d}", "keras_version": "3.15.1"})  # fmt: skip
        for m in steps:
            j.append(step_entry(m))
        j.append({"kind": "end", "outcome": "found", "lo": 4, "hi": 5})
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    got = json.loads(captured.out)
    assert got["outcome"] == "found" and got["good"] == "tf-nightly-cpu==2.21.0.dev20251101"
    assert got["bad"] == "tf-nightly-cpu==2.21.0.dev20251202" and got["bad_git"] == "v1.12.1-5-gabc0005"
    assert [s["kind"] for s in got["steps"]] == ["endpoints", "midpoint", "midpoint", "midpoint", "final"]
    assert "The slowdown came between tf-nightly-cpu==2.21.0.dev20251101 (2025-11-01)" in captured.err
    assert "compare/abc0004...abc0005" in (folder / "bisect.md").read_text()
    assert (folder / "ratio-by-date.png").is_file()
