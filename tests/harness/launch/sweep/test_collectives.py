"""``run --sweep collectives`` end to end: real all-reduces in worker processes, rows read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.results.store import TABLES, read
from tests.cli import cli
from tests.harness.launch.cells.test_runner import harness, worker_processes

pytestmark = pytest.mark.process


def test_collectives_sweep_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = harness(
        "run",
        "--sweep",
        "collectives",
        "--replicas",
        "2",
        "--workers",
        "2",
        "--cross-device-ops",
        "auto,nccl",
        "--communication",
        "ring",
        "--max-bytes",
        "4096",
        "--processes",
        "1",
        "--results",
        str(out),
        env={"TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert worker_processes(str(tmp_path)) == []
    rows = read(out, "collectives")
    assert set(TABLES["collectives"].schema.names) <= set(rows.columns)
    ok = rows[rows.status == "ok"]
    # per topology: 4 KiB, then the cnn and dense gradient sets
    assert sorted(ok.groupby(["strategy", "op"]).size().items()) == [
        (("mirrored", "auto"), 3),
        (("multi_worker_mirrored", "ring"), 3),
    ]
    assert set(ok.payload) == {"bytes", "cnn", "dense"}
    assert (ok.time_s > 0).all() and (ok.busbw_gbps > 0).all() and (ok.max_rel_error == 0).all()
    assert (ok.devices == 2).all() and ok.fingerprint.notna().all()
    assert set(ok.effective_op) == {"CollectiveAllReduce(RING)"}
    unsupported = rows[rows.status == "unsupported"]
    assert list(unsupported.op) == ["nccl"] and "NcclAllReduce" in unsupported.reason.iloc[0]
    assert "busbw" in proc.stdout and "mirrored[auto]" in proc.stdout


def test_max_bytes_belongs_to_the_collectives_sweep(tmp_path: Path) -> None:
    proc = cli("list", "--sweep", "smoke", "--max-bytes", "4096")
    assert proc.returncode == 2 and "--max-bytes=4096 with --sweep smoke" in proc.stderr
    proc = cli("list", "--sweep", "collectives", "--max-bytes", "10")
    assert proc.returncode == 2 and "expected at least 4096" in proc.stderr
