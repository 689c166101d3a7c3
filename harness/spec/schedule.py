"""The order of a run's processes: passes over the cells, each pass in a new order. Pure.

A cell is measured once per pass, in fresh worker processes, so a slow spell of the machine lowers
one process of many cells instead of every process of one cell. Pass 0 keeps the planned order
(1-device baselines first, each cell alone before it shares its devices); later passes shuffle it
with a seed derived from the protocol's, so every task of a real cluster computes the same order."""

from __future__ import annotations

import random
from collections.abc import Sequence

from harness.spec.cell import Cell


def pass_order(cells: Sequence[Cell], pass_index: int, seed: int = 0) -> list[Cell]:
    """The cells in the order pass ``pass_index`` (0-based) runs them."""
    order = list(cells)
    if pass_index > 0:
        random.Random(f"{seed}/{pass_index}").shuffle(order)
    return order
