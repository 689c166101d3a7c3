"""A configuration in words (labels unique over a whole sweep) and as `run` flags (that select it)."""

from __future__ import annotations

from harness.spec import words
from harness.spec.axes import AXES
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.spec.sweep import expand
from harness.spec.sweeps import SWEEPS


def _values(cell: Cell) -> dict[str, object]:
    return {a.name: getattr(cell, a.name) for a in AXES}


def test_labels_are_unique_among_each_model_s_cells_of_the_default_sweep() -> None:
    cells = expand(SWEEPS["default"], Platform())
    for model in {c.model for c in cells}:
        mine = [_values(c) for c in cells if c.model == model]
        named = words.labels(mine)
        assert len(set(named)) == len(mine), named
        assert "MirroredStrategy on 2 replicas, HierarchicalCopyAllReduce" in named


def test_a_description_says_the_strategy_with_its_devices_and_leaves_reference_values_out() -> None:
    mirrored = _values(Cell(strategy="mirrored", replicas=2, accum_steps=4))
    assert words.describe(mirrored, only=["strategy", "replicas", "accum_steps", "loop"]) == (
        "MirroredStrategy on 2 replicas, 4 accumulation steps per update"
    )
    assert "a custom training loop" in words.describe(mirrored, always=True)  # essential: said


def test_flags_select_the_configuration_with_one_axis_varied() -> None:
    config = _values(Cell(model="dense", strategy="multi_worker_mirrored", workers=2, communication="ring"))
    assert words.flags(config, vary=("precision", ("float32", "mixed_bfloat16"))) == (
        "--model dense --strategy multi_worker_mirrored --communication ring --workers 2 "
        "--precision float32,mixed_bfloat16"
    )
