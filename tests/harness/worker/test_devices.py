"""A cluster task that sees too few GPUs fails loudly instead of computing on the CPU."""

from __future__ import annotations

from harness.worker.devices import gpu_shortfall


def test_a_task_with_enough_gpus_is_fine() -> None:
    assert gpu_shortfall(2, 2, "2,3", "worker 1") is None
    assert gpu_shortfall(1, 0, None, "ps 0") is None


def test_a_task_with_too_few_gpus_is_named_with_its_mask() -> None:
    why = gpu_shortfall(0, 1, "4", "worker 2")
    assert why == (
        "worker 2 sees 0 GPU(s) (CUDA_VISIBLE_DEVICES='4') and needs 1: its work would run on the CPU"
    )
