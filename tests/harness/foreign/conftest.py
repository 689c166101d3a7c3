"""Fixtures of the co-tenant tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def jax_without_a_gpu() -> Any:
    """JAX with no GPU platform (its CPU build, as when its GPU plugin fails), else a skip."""
    jax = pytest.importorskip("jax")
    try:
        jax.devices("gpu")
    except RuntimeError:
        return jax
    pytest.skip("this JAX has a GPU")
