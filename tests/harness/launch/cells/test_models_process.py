"""Real architectures and a user's model, end to end (minutes: the slow tier): a user's MLP file,
MobileNetV2 (BatchNorm) and the Transformer (an Embedding) under default and mirrored on 2 replicas
are ok, with FLOPs counted in the worker and MFU; a function that returns something else is a row
that says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[4]

USER = """
import keras


def mlp():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Flatten(),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])


def not_a_model():
    return 42
"""


@pytest.mark.process
@pytest.mark.slow
def test_real_architectures_and_a_users_model_run_under_every_replica_count(tmp_path: Path) -> None:
    user = tmp_path / "user_models.py"
    user.write_text(USER)
    models = f"{user}:mlp,{user}:not_a_model,mobilenetv2,transformer"
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--model", models, "--strategy", "default,mirrored"]
        + ["--replicas", "1,2", "--batch", "8", "--steps-per-execution", "2", "--processes", "1"]
        + ["--max-processes", "1", "--budget-min", "10", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    cells = pd.read_parquet(out / "cells").set_index("cell_id")
    bad = cells[cells.index.str.startswith("user_models.not_a_model@")]
    assert proc.returncode == 1 and all(f"\n  {c}" in proc.stderr for c in bad.index), proc.stderr[-3000:]
    assert (bad.status == "failed").all() and bad.reason.str.contains(
        "returned int, expected a keras.Model"
    ).all()
    good = cells.drop(bad.index)
    assert len(good) == 9 and (good.status == "ok").all(), good[["status", "reason"]].to_string()
    assert (good.flops_source == "counted").all() and good.mfu.gt(0).all()
    mlp = good[good.index.str.startswith("user_models.mlp@")]
    hand = 2 * (2 * 784 * 256) + 3 * (2 * 256 * 64) + 3 * (2 * 64 * 10)
    assert mlp.flops_per_example.div(hand).sub(1).abs().lt(0.05).all()
