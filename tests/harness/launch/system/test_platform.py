"""GPUs as ``nvidia-smi -L`` lists them: plain GPUs, MIG instances, a parent's mask (pure parsing);
the machine's facts from /proc, /sys and nvidia-smi text fixtures and a fake tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract.machine import PROTOCOL_VERSION, MachineFacts
from harness.contract.records import RunInfo
from harness.errors import HarnessError
from harness.launch.system import platform as plat
from harness.launch.system.platform import NvidiaGpus, parse_nvidia_smi_list

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


# ------------------------------------------------------------------------------------------------
# The machine's facts: each parser on text as the host writes it, then machine_facts on a fake tree
# ------------------------------------------------------------------------------------------------

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 23
model\t\t: 49
model name\t: AMD EPYC
stepping\t: 0
flags\t\t: sse2 avx2 fpu avx2 aes

processor\t: 1
model name\t: Some Other CPU
flags\t\t: fpu
"""
CGROUP_V1 = """9:name=systemd:/
4:memory:/process_api/dc21
2:cpuacct:/
1:cpu:/halved
0::/
"""
CGROUP_V1_JOINED = "3:cpu,cpuacct:/job/task\n0::/\n"
CGROUP_V2 = "0::/user.slice/run.scope\n"
GPU_QUERY = "NVIDIA H100 80GB HBM3, 81559, 550.54.15\nNVIDIA H100 80GB HBM3, 81559, 550.54.15\n"
MEMINFO = "MemTotal:       24683656 kB\nMemFree:        1000000 kB\nMemAvailable:   20000000 kB\n"


def test_cpuinfo_gives_the_first_processors_model_and_its_flags_sorted() -> None:
    cpu = plat.parse_cpuinfo(CPUINFO)
    assert (cpu.model, cpu.family, cpu.model_number, cpu.stepping) == ("AMD EPYC", "23", "49", "0")
    assert cpu.flags == ("aes", "avx2", "fpu", "sse2")  # sorted, each once
    arm = plat.parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd\nCPU part\t: 0xd0c\n")
    assert (arm.model, arm.flags) == ("", ("asimd", "fp"))
    assert plat.parse_cpuinfo("") == plat.CpuInfo()


def test_the_cgroup_file_names_each_controllers_path() -> None:
    assert plat.parse_cgroups(CGROUP_V1)["cpu"] == "/halved"
    assert plat.parse_cgroups(CGROUP_V1)[""] == "/"
    joined = plat.parse_cgroups(CGROUP_V1_JOINED)
    assert joined["cpu"] == joined["cpuacct"] == "/job/task"
    assert plat.parse_cgroups(CGROUP_V2) == {"": "/user.slice/run.scope"}


@pytest.mark.parametrize(
    "text, cpus",
    [("max 100000\n", 0.0), ("50000 100000\n", 0.5), ("200000 100000", 2.0), ("", 0.0), ("x y", 0.0)],
)
def test_cpu_max_is_cpus_or_no_quota(text: str, cpus: float) -> None:
    assert plat.parse_cpu_max(text) == cpus


@pytest.mark.parametrize(
    "quota, period, cpus",
    [("-1\n", "100000\n", 0.0), ("100000\n", "100000\n", 1.0), ("150000", "100000", 1.5), ("", "1", 0.0)],
)
def test_cfs_quota_is_cpus_or_no_quota(quota: str, period: str, cpus: float) -> None:
    assert plat.parse_cfs_quota(quota, period) == cpus


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_a_v1_quota_is_read_under_cpu_or_cpu_cpuacct_and_the_smallest_of_its_parents_wins(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path,
        {  # the host's layout: no quota at the root, a 1-CPU test group "halved"
            "cpu/cpu.cfs_quota_us": "-1\n",
            "cpu/cpu.cfs_period_us": "100000\n",
            "cpu/halved/cpu.cfs_quota_us": "100000\n",
            "cpu/halved/cpu.cfs_period_us": "100000\n",
        },
    )
    assert plat.cpu_quota(plat.parse_cgroups(CGROUP_V1), tmp_path) == 1.0
    assert plat.cpu_quota({"cpu": "/", "": "/"}, tmp_path) == 0.0  # -1: no quota
    _write(
        tmp_path,
        {
            "cpu,cpuacct/job/cpu.cfs_quota_us": "50000",
            "cpu,cpuacct/job/cpu.cfs_period_us": "100000",
            "cpu,cpuacct/job/task/cpu.cfs_quota_us": "300000",
            "cpu,cpuacct/job/task/cpu.cfs_period_us": "100000",
        },
    )
    assert plat.cpu_quota(plat.parse_cgroups(CGROUP_V1_JOINED), tmp_path / "elsewhere") == 0.0
    (tmp_path / "cpu").rename(tmp_path / "gone")
    assert plat.cpu_quota(plat.parse_cgroups(CGROUP_V1_JOINED), tmp_path) == 0.5  # the parent caps it


def test_a_v2_quota_is_read_from_cpu_max(tmp_path: Path) -> None:
    _write(
        tmp_path, {"user.slice/run.scope/cpu.max": "150000 100000\n", "user.slice/cpu.max": "max 100000\n"}
    )
    assert plat.cpu_quota(plat.parse_cgroups(CGROUP_V2), tmp_path) == 1.5
    assert plat.cpu_quota({"": "/"}, tmp_path) == 0.0  # no cpu.max at the root
    assert plat.cpu_quota({}, tmp_path) == 0.0


def test_caches_read_as_one_line_in_level_order(tmp_path: Path) -> None:
    for i, (level, kind, size) in enumerate(
        [("2", "Unified", "512K"), ("1", "Data", "32K"), ("1", "Instruction", "32K"), ("3", "Unified", "16M")]
    ):
        _write(
            tmp_path, {f"index{i}/level": level + "\n", f"index{i}/type": kind + "\n", f"index{i}/size": size}
        )
    assert plat.read_caches(tmp_path) == "L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 16384 KiB"
    assert plat.read_caches(tmp_path / "none") == ""
    assert plat.parse_cache_size_kib("65536") == 64  # bytes
    assert plat.parse_cache_size_kib("?") == 0


def test_memory_without_memtotal_is_unknown(tmp_path: Path) -> None:
    _write(tmp_path, {"meminfo": "MemFree: 1 kB\n"})
    assert plat.machine_facts(meminfo=tmp_path / "meminfo", cores=1, gpus="").memory_gib == 0


def test_gpus_from_the_query_their_smallest_memory_and_driver() -> None:
    gpus = plat.parse_gpu_query(GPU_QUERY + "NVIDIA A100-SXM4-40GB, 40960, 550.54.15\n")
    assert gpus.names == ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB")
    assert (gpus.memory_mib, gpus.driver) == (40960, "550.54.15")
    assert plat.parse_gpu_query("NVIDIA H100, [N/A], 550.54.15\n").memory_mib == 0  # unknown
    assert plat.parse_gpu_query("") == plat.GpuFacts()
    assert plat.parse_gpu_query("NVIDIA-SMI has failed because it couldn't communicate\n") == plat.GpuFacts()


def test_machine_facts_read_off_a_fake_host(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "proc/cpuinfo": CPUINFO,
            "proc/meminfo": MEMINFO,
            "proc/cgroup": CGROUP_V1,
            "cgroup/cpu/halved/cpu.cfs_quota_us": "100000\n",
            "cgroup/cpu/halved/cpu.cfs_period_us": "100000\n",
            "cache/index0/level": "1",
            "cache/index0/type": "Data",
            "cache/index0/size": "32K",
        },
    )
    facts = plat.machine_facts(
        tmp_path / "proc/cpuinfo",
        tmp_path / "proc/meminfo",
        tmp_path / "proc/cgroup",
        tmp_path / "cgroup",
        tmp_path / "cache",
        cores=2,
        gpus=GPU_QUERY,
    )
    assert facts == MachineFacts(
        cpu_model="AMD EPYC",
        cpu_family="23",
        cpu_model_number="49",
        cpu_stepping="0",
        cpu_flags="aes avx2 fpu sse2",
        cores=2,
        cpu_quota=1.0,
        caches="L1d 32 KiB",
        memory_gib=24,  # 23.5 GiB, rounded
        gpus=("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        gpu_memory_mib=81559,
        gpu_driver="550.54.15",
    )
    assert facts.default_name == f"NVIDIA H100 80GB HBM3 x2 {facts.short_id}"
    text = facts.words
    assert text.startswith("AMD EPYC (family 23, model 49, stepping 0), 2 cores, a 1-CPU quota, L1d 32 KiB")
    assert text.endswith("; 2 x NVIDIA H100 80GB HBM3, 81559 MiB, driver 550.54.15")
    nothing = plat.machine_facts(*(tmp_path / "missing" / n for n in "abcde"), cores=1, gpus="")
    assert nothing == MachineFacts(cores=1)  # unreadable files: unknown facts, no error
    assert nothing.words == "unknown CPU, 1 cores, no CPU quota, 0 CPU flags; no GPU"


def test_this_host_has_facts_and_a_stamp_carries_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plat, "gpu_query", lambda: "")  # no nvidia-smi process
    here = plat.this_machine()
    assert here.facts.cores >= 1 and here.name == here.facts.default_name
    run = plat.HostMachine("lab box", here.facts).stamp(RunInfo(run_id="r", suite_version="s"))
    assert (run.run_id, run.machine, run.machine_id) == ("r", "lab box", here.facts.short_id)
    assert run.machine_facts is not None and MachineFacts.from_json(run.machine_facts) == here.facts
    assert run.protocol_version == PROTOCOL_VERSION
    monkeypatch.setattr(plat, "gpu_models", lambda listing=None: [])
    journaled = plat.machine("v", plat.HostMachine("lab box", here.facts))  # a run's plan: name, facts
    assert journaled["name"] == "lab box" and MachineFacts.from_json(journaled["facts"]) == here.facts
    assert "name" not in plat.machine("v")  # what load() compares: this host's facts, no name


def test_the_instance_id_hashes_the_first_readable_of_its_files(tmp_path: Path) -> None:
    uuid, boot = tmp_path / "product_uuid", tmp_path / "boot_id"
    boot.write_text("c2db6619-7919\n")
    by_boot = plat.instance_id((uuid, boot))
    assert len(by_boot) == 6 and by_boot == plat.instance_id((boot,))
    uuid.write_text("ec2a-1234\n")
    assert plat.instance_id((uuid, boot)) not in ("", by_boot)
    assert plat.instance_id((tmp_path / "none",)) == ""
    run = plat.HostMachine("lab", MachineFacts(cores=2), by_boot).stamp(RunInfo(run_id="r"))
    assert run.instance_id == by_boot and run.machine_id == MachineFacts(cores=2).short_id
