"""A TensorFlow cell with a co-tenant from another framework, end to end: both sides measured alone
and together in the same processes, the co-tenant's FLOPs checked, a failing co-tenant named in the
row, and a missing framework a row saying what to install."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.spec.frameworks import tenant_key, together_key

pytestmark = pytest.mark.process
ROOT = Path(__file__).resolve().parents[3]
QUICK = (
    "--blocks",
    "2",
    "--turn-s",
    "0.1",
    "--warmup-windows",
    "0",
    "--processes",
    "2",
    "--max-processes",
    "2",
)
QUICK += ("--no-peak", "--no-breakdown")


def _run(
    out: Path, framework: str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--out",
        str(out),
        "--model",
        "cnn",
        "--strategy",
        "default",
    ]
    argv += ["--tenant-framework", framework, *QUICK, *extra]
    return subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})}
    )


def _check_both_sides(tmp_path: Path, framework: str) -> None:
    from harness.results import history, store

    out = tmp_path / "results"
    proc = _run(out, framework)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells, windows = history.load(out)
    row = cells.iloc[0]
    assert row["status"] == "ok", row["reason"]
    assert row["tenant_framework"] == framework and row["tenant_framework_version"].startswith(framework)
    for name in (
        "alone_examples_per_sec",
        "tenant_alone_examples_per_sec",
        "tenant_together_examples_per_sec",
    ):
        assert row[f"{name}_ci_low"] <= row[name] <= row[f"{name}_ci_high"], name
    # two CPU-bound sides on 2 cores: at least one of them loses speed (which one depends on the
    # frameworks' thread pools: beside TensorFlow, PyTorch kept about 12 % of its speed here)
    assert row["shared_ratio"] > 0 and row["tenant_shared_ratio"] > 0
    assert min(row["shared_ratio"], row["tenant_shared_ratio"]) < 1
    assert 0.3 < row["interference_ratio"] < 2.0
    assert row["tenant_flops_per_example"] == row["flops_per_example"] == 14_256_384, row["tenant_flops_note"]
    tagged = windows.groupby(["framework", "shared"]).size()
    for side in ("tensorflow", framework):  # every side has windows alone and together
        assert tagged.get((side, False), 0) > 0 and tagged.get((side, True), 0) > 0, tagged
    ratios = store.read_ratios(out)
    cell = row["cell_id"]
    shared = ratios[ratios["relation"] == "shared"].set_index("subject")
    assert shared.loc[together_key(cell), "reference"] == cell
    assert shared.loc[together_key(tenant_key(cell, framework)), "reference"] == tenant_key(cell, framework)


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="JAX is not installed (pip install -e '.[jax]')"
)
def test_a_jax_co_tenant_is_measured_alone_and_together(tmp_path):
    _check_both_sides(tmp_path, "jax")


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="PyTorch is not installed (pip install -e '.[torch]')"
)
def test_a_torch_co_tenant_is_measured_alone_and_together(tmp_path):
    _check_both_sides(tmp_path, "torch")


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="JAX is not installed (pip install -e '.[jax]')"
)
def test_a_co_tenant_that_fails_fails_the_cell_at_once_with_its_error(tmp_path):
    from harness.results import history

    t0 = time.monotonic()
    proc = _run(tmp_path / "results", "jax", env={"HARNESS_TENANT_FAULT": "startup"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = history.load(tmp_path / "results")[0].iloc[0]
    assert row["status"] == "failed"
    assert "the JAX co-tenant failed" in row["reason"] and "planted co-tenant failure" in row["reason"]
    assert time.monotonic() - t0 < 300  # not the cell's deadline (600 s)


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch is installed here")
def test_a_missing_framework_is_a_row_naming_what_to_install(tmp_path):
    from harness.results import history

    proc = _run(tmp_path / "results", "torch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = history.load(tmp_path / "results")[0].iloc[0]
    assert row["status"] == "unsupported" and "pip install -e '.[torch]'" in row["reason"]
