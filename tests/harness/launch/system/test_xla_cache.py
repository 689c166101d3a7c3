"""Which workers get XLA's persistent compilation cache (no TensorFlow, no process)."""

from __future__ import annotations

from pathlib import Path

from harness.launch.system import xla_cache
from harness.spec.cell import Cell

PLAIN = Cell(model="dense", strategy="default")
XLA = Cell(model="dense", strategy="default", xla="on")


def test_a_run_with_an_xla_cell_shares_one_cache_folder() -> None:
    got = xla_cache.env([PLAIN, XLA], Path("/r/logs/x/xla-cache"), {})
    assert got == (("TF_XLA_FLAGS", "--tf_xla_persistent_cache_directory=/r/logs/x/xla-cache"),)


def test_no_xla_cell_no_variable_and_the_users_flags_are_kept() -> None:
    assert xla_cache.env([PLAIN], Path("/c"), {}) == ()
    kept = xla_cache.env([XLA], Path("/c"), {"TF_XLA_FLAGS": "--tf_xla_clustering_debug"})
    assert kept == (("TF_XLA_FLAGS", "--tf_xla_clustering_debug --tf_xla_persistent_cache_directory=/c"),)
    own = {"TF_XLA_FLAGS": "--tf_xla_persistent_cache_directory=/mine"}
    assert xla_cache.env([XLA], Path("/c"), own) == ()
