"""The package contracts in pyproject.toml hold: the layers (each package imports only those
below it), the parent side never imports TensorFlow, Keras or the worker package, spec and the
contract are pure, results, analysis and formulas start no process; and no module of the harness
takes part in an import cycle (function-level imports included).

import-linter runs in a subprocess of its own (it writes to the terminal as it goes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))"
)


@pytest.mark.process
def test_import_contracts_hold() -> None:
    pytest.importorskip("importlinter")
    proc = subprocess.run(
        [sys.executable, "-c", LINT, str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert f"{contracts} kept, 0 broken" in proc.stdout, proc.stdout


def _cycles(graph: object) -> list[list[str]]:
    """Strongly connected components of more than one module in the harness's import graph."""
    modules = sorted(m for m in graph.modules if m.startswith("harness"))  # type: ignore[attr-defined]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.find_modules_directly_imported_by(v):  # type: ignore[attr-defined]
            if not w.startswith("harness"):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    return found


def test_no_import_cycle() -> None:
    grimp = pytest.importorskip("grimp")
    assert _cycles(grimp.build_graph("harness")) == []
