"""``python -m harness compare`` and ``report`` on synthetic histories written with the real store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.analysis.comparisons.compare import compare, markdown
from harness.analysis.comparisons.gate import GatePolicy
from harness.contract.columns import flatten, unflatten
from harness.contract.records import CellRow
from harness.errors import EXIT_SHORT_HISTORY, EXIT_USAGE, HarnessError
from harness.results import history
from harness.results.measurement import cell_row
from harness.results.store import RunFiles
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol
from tests.cli import cli

ROOT = Path(__file__).resolve().parents[4]
CELLS = [Cell(model=m, strategy=s) for m in ("cnn", "dense") for s in ("default", "mirrored")]


def write_run(
    results: Path,
    day: int,
    seed: int,
    slowdown: dict[str, float] | None = None,
    noise: float = 0.02,
    fingerprint: str = "fp1",
    failed: tuple[str, ...] = (),
) -> str:
    """One run of CELLS: 5 windows per cell around 1000 examples/s (x the slowdown factor)."""
    rng = np.random.default_rng(seed)
    run_id = f"2026110{day}T000000Z-{seed:06x}"
    files = RunFiles(results, f"2026-11-0{day}", run_id)
    for i, cell in enumerate(CELLS):
        level = 1000.0 * (slowdown or {}).get(cell.id, 1.0) * (1 + noise * rng.standard_normal())
        rates = level * (1 + noise * rng.standard_normal(5))
        row = {
            **flatten(cell_row(cell, Protocol())),
            "run_id": run_id,
            "fingerprint": fingerprint,
            "timestamp": f"2026-11-0{day}T00:00:{i:02d}+00:00",
            "status": "ok",
            "reason": "",
            "examples_per_sec": float(np.median(rates)),
            "examples_per_sec_ci_low": float(rates.min()),
            "examples_per_sec_ci_high": float(rates.max()),
            "cv_within_process": 0.02,
            "compile_s": 1.0,
            "process_examples_per_sec": [float(level * (1 + noise * z)) for z in rng.standard_normal(3)],
            "startup_s": 0.5,
            "logical_devices": False,
            "oversubscribed": False,
            "scaling_efficiency": 1.0,
        }
        windows = [
            {
                "run_id": run_id,
                "cell_id": cell.id,
                "worker": 0,
                "repeat": k,
                "window_steps": 10,
                "window_s": 640 / r,
                "examples": 640,
                "examples_per_sec": float(r),
            }
            for k, r in enumerate(rates)
        ]
        if cell.id in failed:
            row.update(status="failed", reason="boom", examples_per_sec=None)
            windows = []
        files.write_windows(i, windows)
        files.write_row(i, unflatten(CellRow, row))
    return run_id


def history_of(tmp_path: Path, runs: int, **candidate: object) -> Path:
    results = tmp_path / "results"
    for r in range(runs):
        write_run(results, 1 + r // 4 if r < 32 else 9, seed=r + 1)
    write_run(results, 9, seed=999, **candidate)  # the candidate: newest
    return results


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` (its ``main``) in the session's command-line interpreter."""
    return cli(*args)


@pytest.mark.process
def test_injected_regression_is_detected(tmp_path: Path) -> None:
    slow = CELLS[1].id
    results = history_of(tmp_path, 12, slowdown={slow: 0.85})
    md = tmp_path / "comment.md"
    proc = harness("compare", "--results", str(results), "--markdown", str(md))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(s for s in proc.stdout.splitlines() if slow in s)
    assert line.startswith("lower")
    assert sum(s.startswith("lower") for s in proc.stdout.splitlines()) == 1
    assert "**Performance regression**" in md.read_text() and slow in md.read_text()


@pytest.mark.process
def test_noise_only_is_not_flagged(tmp_path: Path) -> None:
    proc = harness("compare", "--results", str(history_of(tmp_path, 12)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert not any(s.startswith(("lower", "higher")) for s in lines)
    assert sum(s.startswith(("equivalent", "undecided")) for s in lines) == 4


@pytest.mark.process
def test_too_short_a_history_exits_3(tmp_path: Path) -> None:
    proc = harness("compare", "--results", str(history_of(tmp_path, 3)))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "not enough history" in proc.stdout


@pytest.mark.process
def test_missing_results_exit_2_and_a_corrupt_file_is_named_while_the_rest_is_judged(tmp_path: Path) -> None:
    proc = harness("compare", "--results", str(tmp_path / "nowhere"))
    assert proc.returncode == 2 and "no results under" in proc.stderr
    results = history_of(tmp_path, 6)
    bad = next((results / "cells").rglob("*.parquet"))
    bad.write_bytes(b"not parquet")
    proc = harness("compare", "--results", str(results))  # named, with what to do; the rest judged
    assert f"warning: {bad} cannot be read" in proc.stderr and "move it out of" in proc.stderr, proc.stderr
    assert proc.returncode == 3 and "not enough history" in proc.stdout, proc.stdout
    proc = harness("compare", "--results", str(tmp_path / "nowhere"), "--min-effect", "2")
    assert proc.returncode == 2 and "--min-effect" in proc.stderr


@pytest.mark.process
def test_a_first_run_is_not_enough_history_not_an_error(tmp_path: Path) -> None:
    """After one run into a fresh results folder, the default compare (last:20 before latest) finds
    no baseline: that is too short a history (exit 3, saying how many runs there are and are
    needed), not a reference that matches nothing (exit 2)."""
    results = tmp_path / "results"
    write_run(results, 1, seed=1)
    md = tmp_path / "comment.md"
    proc = harness("compare", "--results", str(results), "--markdown", str(md))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "not enough history: the results hold 1 run" in out, out
    assert "needs 10 baseline runs" in out and "11 runs in all" in out, out
    assert "Not enough history to judge" in md.read_text()
    assert "1 run" in md.read_text()
    proc = harness("compare", "--results", str(results), "--candidate", "previous")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "holds 1 run; 'previous' needs at least 2" in " ".join(proc.stderr.split())
    write_run(results, 2, seed=2)
    proc = harness("compare", "--results", str(results))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "the results hold 2 runs" in " ".join(proc.stdout.split())


@pytest.mark.process
def test_a_reference_to_nothing_stays_exit_2(tmp_path: Path) -> None:
    results = history_of(tmp_path, 3)
    for flag, ref in (
        ("--baseline", "2026-10-31"),
        ("--baseline", "2026-10-01..2026-10-31"),
        ("--baseline", "19990101T"),
        ("--candidate", "nope"),
        ("--candidate", "2026-10-31"),
    ):
        proc = harness("compare", "--results", str(results), flag, ref)
        assert proc.returncode == 2, (flag, ref, proc.stdout + proc.stderr)
        assert f"Received {flag}={ref!r}: no run matches" in proc.stderr, proc.stderr


def test_a_cell_that_now_fails_is_a_regression(tmp_path: Path) -> None:
    cells, _ = history.load(history_of(tmp_path, 6, failed=(CELLS[0].id,)))
    chosen = history.select_comparison(cells, "last:10", "latest")
    result = compare(cells, chosen.candidate, chosen.baseline, chosen.history_runs)
    assert result.exit_code == 1 and result.broken[0][:2] == (CELLS[0].id, "failed")
    assert "now failing" in markdown(result)


def test_other_fingerprints_are_not_history(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for r in range(6):
        write_run(results, 1, seed=r + 1, fingerprint="other-machine")
    write_run(results, 2, seed=99)
    cells, _ = history.load(results)
    chosen = history.select_comparison(cells, "last:10", "latest")
    result = compare(cells, chosen.candidate, chosen.baseline, chosen.history_runs, GatePolicy())
    assert {v.change for v in result.verdicts} == {"new"} and result.exit_code == 3


def test_references_resolve() -> None:
    runs = pd.DataFrame(
        {
            "run_id": ["a1", "b2", "c3", "d4"],
            "start": ["2026-11-01T1", "2026-11-02T1", "2026-11-02T2", "2026-11-03T1"],
        }
    )
    assert history.resolve("latest", runs) == ["d4"]
    assert history.resolve("previous", runs) == ["c3"]
    assert history.resolve("last:2", runs, before=["d4"]) == ["b2", "c3"]
    assert history.resolve("2026-11-02", runs) == ["b2", "c3"]
    assert history.resolve("2026-11-01..2026-11-02", runs) == ["a1", "b2", "c3"]
    assert history.resolve("c", runs) == ["c3"]
    with pytest.raises(HarnessError, match="no run matches"):
        history.resolve("zz", runs)
    with pytest.raises(HarnessError, match="holds 4 runs, none of them before") as short:
        history.resolve("latest", runs, before=["a1"], short_exit=EXIT_SHORT_HISTORY)
    assert short.value.exit_code == EXIT_SHORT_HISTORY
    with pytest.raises(HarnessError, match="holds 1 run; 'previous' needs at least 2") as short:
        history.resolve("previous", runs[:1])
    assert short.value.exit_code == EXIT_USAGE  # report, compare-hardware: a bad reference
    with pytest.raises(HarnessError, match="no run matches") as missing:
        history.resolve("2026-10-31", runs, before=["d4"])
    assert missing.value.exit_code == EXIT_USAGE


@pytest.mark.process
def test_report_writes_figures_and_one_html(tmp_path: Path) -> None:
    results = history_of(tmp_path, 1)
    proc = harness("report", "--results", str(results), "--report-dir", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "report" / "report.html"
    pngs = list((tmp_path / "report" / "figures").glob("*.png"))
    svgs = list((tmp_path / "report" / "figures").glob("*.svg"))
    assert pngs and len(pngs) == len(svgs) and all(p.stat().st_size > 1000 for p in pngs + svgs)
    text = page.read_text()
    assert "data:image/png;base64," in text and "How the numbers were measured" in text


def _two_machines(tmp_path: Path, tf_b: str = "2.21.0") -> Path:
    results = tmp_path / "results"
    write_run(results, 1, seed=1, fingerprint="machineA")
    write_run(results, 2, seed=2, fingerprint="machineB", slowdown={c.id: 2.0 for c in CELLS})
    cells = history.load(results)[0]
    for path in (results / "cells").rglob("*.parquet"):  # name the machines and their software
        df = pd.read_parquet(path)
        fp = df.fingerprint.iloc[0]
        df["machine"] = "fast" if fp == "machineB" else "slow"
        df["device_count"] = 1
        df["tf_version"] = tf_b if fp == "machineB" else "2.21.0"
        df["keras_version"], df["suite_version"] = "3.15.1", "0.1.0+abc"
        df.to_parquet(path)
    assert len(cells) == 8
    return results


@pytest.mark.process
def test_compare_hardware_ratios_cost_page_and_json(tmp_path: Path) -> None:
    results = _two_machines(tmp_path)
    prices = tmp_path / "prices.csv"
    prices.write_text("machine,usd_per_hour\nfast,4.0\n")
    proc = harness(
        "compare-hardware",
        "--results",
        str(results),
        "--prices",
        str(prices),
        "--prices",
        "slow=1",
        "--baseline",
        "slow",
        "--csv",
        str(tmp_path / "hw.csv"),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["baseline"] == "slow" and {m["name"] for m in out["machines"]} == {"fast", "slow"}
    for row in out["rows"]:
        if row["versus"] is not None:  # twice as fast, one run each: decided, the CI holds 2
            r = row["versus"]["ratio"]
            assert r["low"] < 2.0 < r["high"] and row["versus"]["verdict"] == "higher"
    assert "one run each" not in proc.stderr and "fitted on" in proc.stderr
    table = pd.read_csv(tmp_path / "hw.csv")
    assert set(table.machine) == {"fast"}
    assert (results / "hardware" / "hardware.html").exists()
    assert (results / "hardware" / "hardware.png").exists()


@pytest.mark.process
def test_compare_hardware_refuses_unlike_software(tmp_path: Path) -> None:
    proc = harness("compare-hardware", "--results", str(_two_machines(tmp_path, tf_b="2.20.0")))
    assert proc.returncode == 2
    assert "refusing to compare runs of different TensorFlow / Keras" in proc.stderr
    assert "2.20.0" in proc.stderr and "install one TensorFlow" in proc.stderr
