"""The payloads of --sweep collectives and the sweep's topologies."""

from __future__ import annotations

import itertools

import pytest

from harness.errors import HarnessError
from harness.spec.collectives import GRADIENT_SHAPES, SIZES, payloads
from harness.spec.protocol import Platform
from harness.spec.sweep import expand
from harness.spec.sweeps import collectives_sweep


def test_sizes_run_from_4_kib_to_256_mib_in_powers_of_4() -> None:
    assert SIZES[0] == 4096 and SIZES[-1] == 256 * 2**20
    assert all(b == 4 * a for a, b in itertools.pairwise(SIZES))


def test_payloads_stop_at_max_bytes_then_give_each_gradient_set() -> None:
    found = payloads(65536)
    assert [(p.name, p.bytes) for p in found] == [
        ("bytes", 4096),
        ("bytes", 16384),
        ("bytes", 65536),
        ("cnn", 4 * 34_826),
        ("dense", 4 * 101_770),
    ]
    assert len(found[3].shapes) == len(GRADIENT_SHAPES["cnn"]) == 6
    with pytest.raises(HarnessError, match="--max-bytes=100; expected at least 4096"):
        payloads(100)


def test_replicas_size_mirrored_and_workers_size_multi_worker_mirrored() -> None:
    cells = expand(collectives_sweep((2,), (3,)), Platform("cpu", cpu_devices=2))
    shapes = {(c.strategy, c.replicas, c.workers) for c in cells}
    assert shapes == {("mirrored", 2, 1), ("multi_worker_mirrored", 1, 3)}
    ops = {c.cross_device_ops for c in cells if c.strategy == "mirrored"}
    assert ops == {"auto", "nccl", "hierarchical_copy", "reduction_to_one_device"}
    assert {c.communication for c in cells if c.strategy != "mirrored"} == {"auto", "ring", "nccl"}


def test_the_layer_lists_count_the_parameters_the_gradient_sets_hold() -> None:
    import math

    from harness.spec.models import MODEL_LAYERS

    def parameter_count(model):
        return sum(layer.parameters for layer in MODEL_LAYERS[model]())

    # cnn: 3x3x1x32+32 + 3x3x32x64+64 + 1600x10+10; dense: 784x128+128 + 128x10+10
    assert parameter_count("cnn") == 320 + 18_496 + 16_010 == 34_826
    assert parameter_count("dense") == 100_480 + 1_290 == 101_770
    for model, shapes in GRADIENT_SHAPES.items():
        assert parameter_count(model) == sum(math.prod(s) for s in shapes)
