"""``compare-links`` end to end in this process, on results folders the test writes: runs of a
two-node cluster at two link settings, and the one-node baseline in a folder of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.commands import main
from harness.contract.records import CellRow
from harness.results.store import RunFiles
from tests.harness.analysis.scale.test_links import ONE, cluster_rows, fast_over_slow, mwms_eps


def _write(out: Path, rows: list[CellRow]) -> Path:
    by_run: dict[str, list[CellRow]] = {}
    for r in rows:
        by_run.setdefault(r.run.run_id, []).append(r)
    for run_id, mine in by_run.items():
        files = RunFiles(out, mine[0].run.timestamp[:10], run_id)
        for i, r in enumerate(mine):
            files.write_row(i, r)
    return out


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """(the cluster's results, the one-node baseline's results)."""
    rows = cluster_rows()
    cluster = _write(tmp_path / "cluster", [r for r in rows if r.run.run_id != "local"])
    local = _write(tmp_path / "local", [r for r in rows if r.run.run_id == "local"])
    return cluster, local


def test_the_answer_the_table_and_the_figure(
    folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, local = folders
    assert main(["compare-links", "--results", str(cluster), "--results", str(local)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "What a faster link between nodes buys (0.95 Gbit/s, 9.3 Gbit/s):"
    assert lines[2].startswith(
        "dense, MultiWorkerMirroredStrategy on 2 workers, ring all-reduce on 2 nodes: 9.3 Gbit/s "
        f"trains {fast_over_slow():.2f}x faster than 0.95 Gbit/s ["
    )
    assert f"the model said {fast_over_slow():.2f}x" in lines[2]
    assert out.index("What a faster link") < out.index("examples/s [95% CI]") < out.index("Where the model")
    assert out.index("Where the model") < out.index("The answer for N nodes at 0.95 Gbit/s")
    assert f"{mwms_eps(0.95):,.0f}"[:4] in out and "inside" in out
    assert (cluster / "figures" / "compare_links.png").is_file()
    assert f"wrote {cluster / 'figures' / 'compare_links.svg'}" in out


def test_json_prints_one_object(folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, local = folders
    figures = cluster.parent / "figs"
    argv = ["compare-links", "--results", str(cluster), "--results", str(local), "--figures", str(figures)]
    assert main([*argv, "--json", "--model", "dense"]) == 0
    captured = capsys.readouterr()
    obj = json.loads(captured.out)
    assert obj["command"] == "compare-links" and obj["exit_code"] == 0
    assert [c["strategy"] for c in obj["configurations"]] == ["multi_worker_mirrored", "parameter_server"]
    assert ONE.id in obj["configurations"][0]["prediction"]["note"]
    assert obj["configurations"][0]["nodes_answer"][0]["gbps"] == 0.95
    assert obj["figures"] == [str(figures / "compare_links.png"), str(figures / "compare_links.svg")]
    assert "What a faster link" in captured.err  # the words go to stderr


def test_without_the_baseline_folder_it_says_what_to_run(
    folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, _ = folders
    assert main(["compare-links", "--results", str(cluster)]) == 0
    out = capsys.readouterr().out
    assert "measure it (without --cluster): `python -m harness run --model dense --strategy " in out
    assert "no baseline" in out


@pytest.mark.parametrize(
    "which, extra, message",
    [
        ("local", [], "no multi-node rows (status ok, nodes >= 2) under --results"),
        ("cluster", ["--model", "cnn"], "Received --model 'cnn'; expected one the multi-node rows hold"),
        ("slow", [], "hold one link setting (0.95 Gbit/s: runs slow-a, slow-c, slow-b)"),
        ("cluster", ["--nodes", "1,4"], "Received --nodes='1,4'; expected comma-separated integers from 2"),
        ("cluster", ["--link-gbps", "0,x"], "Received --link-gbps='0,x'; expected comma-separated links"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    folders: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    which: str,
    extra: list[str],
    message: str,
) -> None:
    cluster, local = folders
    slow = _write(tmp_path / "slow", [r for r in cluster_rows() if r.run.run_id.startswith("slow")])
    root = {"cluster": cluster, "local": local, "slow": slow}[which]
    assert main(["compare-links", "--results", str(root), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
