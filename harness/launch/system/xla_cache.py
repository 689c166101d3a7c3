"""XLA's persistent compilation cache, shared by a run's worker processes (docs/how-to/gpus.md).

A cell with XLA (``--xla on``) compiles its training step in every fresh process: on the H200 a
group with XLA took 7.4-12.1 s to be ready against 2.4-5.7 s without (2026-11-26). TensorFlow 2.21
loads compiled executables from ``TF_XLA_FLAGS=--tf_xla_persistent_cache_directory=DIR`` (read when
TensorFlow is imported); the cache changes when a program is ready, not what it computes. A run
gives every worker one folder under its logs; a user's own flag is left as it is."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.spec.cell import Cell

FLAG = "--tf_xla_persistent_cache_directory"
VARIABLE = "TF_XLA_FLAGS"


def env(
    cells: Iterable[Cell], folder: Path, environ: Mapping[str, str] = os.environ
) -> tuple[tuple[str, str], ...]:
    """The variable that points every worker at ``folder`` when a cell compiles with XLA (none
    otherwise, or when the user set a cache of their own); ``TF_XLA_FLAGS``'s other flags kept."""
    flags = environ.get(VARIABLE, "")
    if FLAG in flags or not any(c.jit_compile for c in cells):
        return ()
    return ((VARIABLE, f"{flags} {FLAG}={folder}".strip()),)
