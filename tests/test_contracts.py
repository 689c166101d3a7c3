"""The package contracts in pyproject.toml hold: the parent side (commands, launch, results, analysis,
spec) never imports TensorFlow, Keras or the worker package; the worker reaches the parent only
through the job and event contract; spec is pure; results and analysis start no process.

import-linter runs in a subprocess of its own (it writes to the terminal as it goes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))")


def test_import_contracts_hold() -> None:
    pytest.importorskip("importlinter")
    proc = subprocess.run([sys.executable, "-c", LINT, str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 kept, 0 broken" in proc.stdout, proc.stdout
