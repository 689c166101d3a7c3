"""The package contracts in pyproject.toml hold: the parent side (commands, launch, results, analysis,
spec) never imports TensorFlow, Keras or the worker package; the worker reaches the parent only
through the job and event contract; spec is pure; results and analysis start no process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    cli = pytest.importorskip("importlinter.cli")
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        code = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 kept, 0 broken" in out, out
