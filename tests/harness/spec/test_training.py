"""The updates after which cells' losses compare (harness.spec.training)."""

from __future__ import annotations

import pytest

from harness.spec.training import MIN_SAME_UPDATES, same_updates


@pytest.mark.parametrize("multiple, updates", [(1, 8), (3, 9), (4, 8), (8, 8), (10, 10), (20, 20)])
def test_same_updates_is_the_smallest_multiple_at_or_above_the_minimum(multiple: int, updates: int) -> None:
    assert same_updates(multiple) == updates
    assert updates % multiple == 0 and updates >= MIN_SAME_UPDATES > updates - multiple
