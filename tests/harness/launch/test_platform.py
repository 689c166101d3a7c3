"""GPUs as ``nvidia-smi -L`` lists them: plain GPUs, MIG instances, a parent's mask (pure parsing)."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.launch import platform as plat
from harness.launch.platform import NvidiaGpus, parse_nvidia_smi_list

TWO = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb)
"""
MIG = """GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-aaaa)
  MIG 3g.40gb     Device  0: (UUID: MIG-1111)
  MIG 3g.40gb     Device  1: (UUID: MIG-2222)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-bbbb)
"""


def test_plain_gpus_are_counted_by_index() -> None:
    assert parse_nvidia_smi_list(TWO) == NvidiaGpus(("0", "1"), False)
    assert parse_nvidia_smi_list("") == NvidiaGpus((), False)


def test_gpu_memory_is_the_smallest_of_the_usable_gpus() -> None:
    text = "0, 81559\n1, 40960\n"  # nvidia-smi --query-gpu=index,memory.total --format=csv,noheader,nounits
    assert plat.parse_memory_mib(text, ("0", "1")) == 40960
    assert plat.parse_memory_mib(text, ("0",)) == 81559
    assert plat.parse_memory_mib(text, ("MIG-1111",)) == 0  # not an index: unknown
    assert plat.parse_memory_mib("garbage", ("0",)) == 0


def test_mig_instances_are_the_usable_gpus() -> None:
    # GPU 0 computes only through its two instances; GPU 1 is not in MIG mode
    assert parse_nvidia_smi_list(MIG) == NvidiaGpus(("MIG-1111", "MIG-2222", "1"), True)


@pytest.mark.parametrize(
    "visible, ids",
    [
        ("1", ("1",)),
        ("1,0,2", ("1", "0")),  # never more than the host lists
        ("GPU-bbbb", ("GPU-bbbb",)),
        ("-1", ()),
        ("0,-1,1", ("0",)),
        ("", ()),
    ],
)
def test_a_parent_mask_selects_among_its_entries(visible: str, ids: tuple[str, ...]) -> None:
    assert parse_nvidia_smi_list(TWO, visible).ids == ids


def test_a_mig_mask_is_mig() -> None:
    assert parse_nvidia_smi_list(MIG, "MIG-2222") == NvidiaGpus(("MIG-2222",), True)


def test_the_platform_carries_the_ids_and_mig(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plat, "nvidia_gpus", lambda: parse_nvidia_smi_list(MIG))
    p = plat.detect_platform("auto")
    assert (p.device_kind, p.gpu_count, p.mig, p.max_replicas) == ("gpu", 3, True, 1)
    assert [p.gpu_id(i) for i in range(3)] == ["MIG-1111", "MIG-2222", "1"]
    monkeypatch.setattr(plat, "nvidia_gpus", lambda: NvidiaGpus())
    assert plat.detect_platform("auto").device_kind == "cpu"
    with pytest.raises(HarnessError, match="nvidia-smi lists no GPU"):
        plat.detect_platform("gpu")
