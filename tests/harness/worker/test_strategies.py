"""Every strategy descriptor has exactly one TensorFlow builder (the doctor's probe uses the same)."""

from __future__ import annotations

from harness.spec.strategies import STRATEGIES
from harness.worker.training.strategies import BUILDERS


def test_one_builder_per_descriptor() -> None:
    assert set(BUILDERS) == set(STRATEGIES)
