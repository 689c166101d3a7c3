"""Tests of harness.metrics on literal numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from harness.formulas import metrics


def test_throughput():
    assert metrics.throughput(6400, 2.0) == 3200.0
    assert metrics.throughput(64, 0.5) == 128.0


@pytest.mark.parametrize("seconds", [0, 0.0, -1.0])
def test_throughput_rejects_non_positive_seconds(seconds):
    with pytest.raises(ValueError, match="must be > 0"):
        metrics.throughput(100, seconds)


def test_median():
    assert metrics.median([3.0, 1.0, 2.0]) == 2.0
    assert metrics.median([4, 1, 3, 2]) == 2.5  # even count: mean of the middle two
    assert isinstance(metrics.median([1, 2, 3]), float)


def test_scaling_efficiency():
    assert metrics.scaling_efficiency(150, 2, 100) == 0.75
    assert metrics.scaling_efficiency(400, 4, 100) == 1.0
    assert metrics.scaling_efficiency(100, 1, 100) == 1.0


@pytest.mark.parametrize("devices,baseline", [(0, 100), (2, 0), (2, -1.0)])
def test_scaling_efficiency_rejects_bad_input(devices, baseline):
    with pytest.raises(ValueError):
        metrics.scaling_efficiency(150, devices, baseline)


def test_mfu():
    # 1000 ex/s x 14,256,384 FLOP/ex = 1.4256384e10 FLOP/s over a 1e12 FLOP/s peak
    assert metrics.mfu(1000, 14256384, 1e12) == 0.014256384
    with pytest.raises(ValueError):
        metrics.mfu(1000, 14256384, 0)
    with pytest.raises(ValueError):
        metrics.mfu(1000, 14256384, -1e12)


def test_matmul_flops():
    assert metrics.matmul_flops(2) == 16
    assert metrics.matmul_flops(1024) == 2 * 1024**3


def test_update_imbalance():
    assert metrics.update_imbalance([[10, 10], [10, 10]]) == 1.0
    assert metrics.update_imbalance([[30, 30], [10, 20]]) == 2.0
    assert metrics.update_imbalance([[20], [0]]) == math.inf
    assert math.isnan(metrics.update_imbalance([]))
