"""``nightly`` end to end with the measurement and the environments faked: the exit codes night
after night, the rows kept apart, the markdown summary and the dashboard's content, bad input."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.commands import main
from harness.launch.versions import nightly as launch_nightly
from harness.launch.versions.ab import CellOutcome
from harness.launch.versions.envs import Env
from harness.launch.versions.nightly import NightResult
from harness.results.store import read_cells, read_nightly

FP = "f" * 16
NIGHTS = iter(range(10**6))


@pytest.fixture(autouse=True)
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.launch.cells.runner.git_sha", lambda: "0123456789ab")
    ref = Env(
        "tensorflow-cpu==2.20.*", "/ref/python", "TensorFlow 2.20.0, Keras 3.15.1", "a1b2c3d4e5f6", "x\n"
    )
    cand = Env("tensorflow-cpu==2.21.*", "/cand/python", "TensorFlow 2.21.0, Keras 3.15.1", "0" * 12, "y\n")
    monkeypatch.setattr("harness.launch.versions.envs.reference", lambda spec, envs, folder: ref)
    monkeypatch.setattr("harness.launch.versions.envs.candidate", lambda spec, envs: cand)


def _fake_measure(
    monkeypatch: pytest.MonkeyPatch, ratio: float, sd: float = 0.01, fail: str = "", interrupted: bool = False
) -> None:
    """Each cell's pairs: 20 ratios of mean ``ratio`` (log sd ``sd``), or a failure."""

    def measure(
        cells: Sequence[object], protocol: object, platform: object, out: Path, *a: object, **k: object
    ) -> NightResult:
        rng = np.random.default_rng(7)
        result = NightResult(
            f"2026-11-25T00-00-00Z-fake{next(NIGHTS)}", "2026-11-25", interrupted=interrupted
        )
        for cell in cells:
            o = CellOutcome(cell, "turns")  # type: ignore[arg-type]
            if fail:  # failed before any pair: no facts of its own
                o.failure = fail
            else:
                o.a_facts = {"fingerprint": FP, "host_cpu": "Test CPU", "device_name": "Test CPU"}
                logs = rng.normal(0, sd, 20)
                o.ratios = list(np.exp(logs - logs.mean() + math.log(ratio)))
            result.outcomes.append(o)
        return result

    monkeypatch.setattr(launch_nightly, "measure", measure)


def night(tmp_path: Path, label: str, *extra: str) -> int:
    return main(
        [
            "nightly",
            "--candidate",
            "tensorflow-cpu==2.21.*",
            "--baseline",
            "tensorflow-cpu==2.20.*",
            "--label",
            label,
            "--model",
            "dense",
            "--strategy",
            "default",
            "--no-fork",
            "--results",
            str(tmp_path),
            "--markdown",
            str(tmp_path / "summary.md"),
            *extra,
        ]
    )


def test_exit_codes_night_after_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_measure(monkeypatch, 1.0)
    assert night(tmp_path, "c1") == 0
    assert night(tmp_path, "c2") == 0
    _fake_measure(monkeypatch, 0.95)  # a 5 % regression lands
    assert night(tmp_path, "c3") == 1
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("## nightly c3: regression")
    first_change = md.splitlines()[2]
    assert (
        first_change.startswith("- **lower** (a regression) on dense/default")
        and "its baseline (c1,c2)" in first_change
    )
    assert night(tmp_path, "c4") == 0  # the new level is the baseline now: reported once
    _fake_measure(monkeypatch, 0.95, sd=0.2)  # too noisy to say
    assert night(tmp_path, "c5") == 3
    assert "- **undecided** on dense/default" in (tmp_path / "summary.md").read_text()
    _fake_measure(monkeypatch, 1.0, fail="side B, pair 0: failed: worker exited 1")
    assert night(tmp_path, "c6") == 1  # a failed cell: as in run and compare
    points = read_nightly(tmp_path).sort_values("timestamp")
    assert list(points["label"]) == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert list(points["verdict"].fillna("-")) == [
        "equivalent",
        "equivalent",
        "lower",
        "equivalent",
        "undecided",
        "-",
    ]
    assert points["series"].nunique() == 1
    assert points.iloc[-1]["status"] == "failed" and "worker exited 1" in points.iloc[-1]["reason"]
    assert set(points["reference_versions"]) == {"TensorFlow 2.20.0, Keras 3.15.1"}
    assert read_cells(tmp_path).empty  # nightly rows are kept apart from the run history


def test_the_dashboard_names_the_machine_the_reference_and_every_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_measure(monkeypatch, 1.0)
    night(tmp_path, "v1")
    _fake_measure(monkeypatch, 0.94)
    night(tmp_path, "v2")
    html = (tmp_path / "nightly" / "index.html").read_text()
    assert "Machine: Test CPU" in html and "tensorflow-cpu==2.20.*" in html and "pin a1b2c3d4e5f6" in html
    assert (
        "dense/default/r1w1/b64" in html and "data:image/png;base64," in html and "TensorFlow 2.21.0" in html
    )
    assert html.index("<td>v2</td>") < html.index("<td>v1</td>")  # newest first
    assert '<tr class="regression"><td>v2</td>' in html  # v2's regression row is marked
    assert "<script" not in html


def test_the_first_night_compares_with_the_reference_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_measure(monkeypatch, 0.96)  # the candidate 4 % slower than the pinned reference
    assert night(tmp_path, "first") == 1
    assert "x the reference" in (tmp_path / "summary.md").read_text()
    assert night(tmp_path, "second") == 0


def test_a_series_is_per_reference_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_measure(monkeypatch, 1.0)
    night(tmp_path, "p1")
    other = Env(
        "tensorflow-cpu==2.19.*", "/r/python", "TensorFlow 2.19.0, Keras 3.15.1", "999999999999", "z\n"
    )
    monkeypatch.setattr("harness.launch.versions.envs.reference", lambda spec, envs, folder: other)
    night(tmp_path, "p2")
    assert read_nightly(tmp_path)["series"].nunique() == 2


def test_dry_run_says_how_each_side_is_made_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert night(tmp_path, "d", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "installed into .nightly-envs/reference-tensorflow-cpu__2.20._ (pinned" in out
    assert "budget 15 min" in out and "dry run: nothing started." in out
    assert not (tmp_path / "nightly").exists()


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--candidate", "./no/such/python"], "--candidate='./no/such/python'"),
        (["--baseline", ""], "--baseline=''"),
        (["--min-pairs", "1"], "--min-pairs=1"),
        (["--min-effect", "2"], "min_effect=2"),
        (["--label", "a,b"], "--label='a,b'"),
        (["--strategy", "mirrored", "--replicas", "4"], "none of which runs here"),
        (["--tenant-framework", "jax"], "--tenant-framework jax with nightly; expected none"),
    ],
)
def test_bad_input_is_named_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    args = ["nightly", "--candidate", "x==1", "--baseline", "y==1", "--results", str(tmp_path), *flags]
    assert main(args) == 2
    assert named in capsys.readouterr().err


def test_points_table_reads_back_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_measure(monkeypatch, 1.0)
    night(tmp_path, "t1")
    points = read_nightly(tmp_path)
    assert isinstance(points, pd.DataFrame) and points["pairs"].iloc[0] == 20
    assert 0.99 < points["ratio_ci_low"].iloc[0] < 1 < points["ratio_ci_high"].iloc[0] < 1.01


def test_the_ci_recipe_runs_flags_the_parser_accepts_and_maps_every_exit_code() -> None:
    import shlex

    from harness.commands import build_parser

    recipe = (Path(__file__).resolve().parents[3] / "docs" / "ci" / "nightly.yml").read_text()
    start = recipe.index("python -m harness nightly --")
    line = recipe[start : recipe.index("\n", recipe.index("--results", start))].replace("\\\n", " ")
    words = shlex.split(line.replace('"${GITHUB_SHA::12}"', "abc").replace('"$CANDIDATE"', "c==1"))
    args = build_parser().parse_args([w.replace('"$BASELINE"', "r==1") for w in words[3:]])
    assert args.command == "nightly" and args.markdown == "summary.md" and args.results == "results"
    assert "schedule:" in recipe and "actions/cache/save" in recipe and "upload-artifact" in recipe
    for code in ("0)", "1)", "3)", "*)"):
        assert code in recipe


def test_an_interrupted_night_appends_no_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_measure(monkeypatch, 1.0)
    night(tmp_path, "i1")
    _fake_measure(monkeypatch, 0.9, interrupted=True)
    assert night(tmp_path, "i2") == 130
    assert list(read_nightly(tmp_path)["label"]) == ["i1"]


def test_json_prints_the_night_s_verdict_and_points_alone_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    _fake_measure(monkeypatch, 1.0)
    assert night(tmp_path, "j1", "--json") == 0
    out = json.loads(capsys.readouterr().out)  # the table went to stderr
    assert out["command"] == "nightly" and out["exit_code"] == 0 and out["label"] == "j1"
    assert out["verdict"] == "no regression" and out["points"][0]["status"] == "ok"
    assert any(w.endswith("index.html") for w in out["written"])
