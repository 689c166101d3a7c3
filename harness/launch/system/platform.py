"""Facts about the host known without TensorFlow: GPUs and MIG instances (``nvidia-smi -L``), the
platform to plan for, the suite's git commit, and the machine's facts every row carries
(:func:`machine_facts`: small pure parsers of ``/proc``, ``/sys`` and ``nvidia-smi`` text, and one
function that reads them off this host). ``nvidia-smi``, not NVML (``pynvml``): it comes with every
driver and lists MIG instances by the UUIDs ``CUDA_VISIBLE_DEVICES`` takes, while ``nvidia-ml-py``
is only in the ``cuda`` extra, which a CPU install (where :func:`detect_platform` must still run)
lacks; ``/proc`` is read by hand for the reason :mod:`harness.launch.system.cpu_use` gives."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from harness.contract.machine import PROTOCOL_VERSION, MachineFacts
from harness.contract.records import RunInfo
from harness.errors import HarnessError
from harness.spec.frameworks import FRAMEWORKS
from harness.spec.protocol import Platform, bf16_units


@dataclass(frozen=True)
class NvidiaGpus:
    """The GPUs a run may use: ``ids`` as ``CUDA_VISIBLE_DEVICES`` names them (indices, or MIG
    instances' UUIDs), and whether they are MIG instances."""

    ids: tuple[str, ...] = ()
    mig: bool = False


def parse_nvidia_smi_list(text: str, visible: str | None = None) -> NvidiaGpus:
    """The usable GPUs from ``nvidia-smi -L``: each GPU, or each MIG instance listed under it (a
    GPU in MIG mode computes only through its instances). ``visible``: this process's
    ``CUDA_VISIBLE_DEVICES``, whose entries (indices or UUIDs) are then the usable ones, so a
    worker's mask selects among them rather than among the host's GPUs."""
    gpus: list[str] = []
    migs: list[str] = []
    with_mig: set[str] = set()
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpus.append(line.split(":", 1)[0].split()[1])
        elif line.strip().startswith("MIG ") and "UUID: " in line and gpus:
            migs.append(line.split("UUID: ", 1)[1].rstrip(")").strip())
            with_mig.add(gpus[-1])
    ids = tuple(migs) + tuple(g for g in gpus if g not in with_mig)
    if visible is not None:
        entries = tuple(v.strip() for v in visible.split(",") if v.strip())
        usable = entries[: entries.index("-1")] if "-1" in entries else entries
        ids = usable[: len(ids)]
    return NvidiaGpus(ids, any(i.startswith("MIG-") for i in ids) or (bool(migs) and visible is None))


def nvidia_smi(*args: str) -> str:
    """``nvidia-smi ARGS``'s output ("" without the tool, a driver, or within 20 s)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return ""
    try:
        return subprocess.run([exe, *args], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def nvidia_gpus() -> NvidiaGpus:
    """What ``nvidia-smi -L`` lists for this process (none without the tool or a driver)."""
    out = nvidia_smi("-L")
    return parse_nvidia_smi_list(out, os.environ.get("CUDA_VISIBLE_DEVICES")) if out else NvidiaGpus()


def parse_memory_mib(text: str, ids: tuple[str, ...]) -> int:
    """The smallest memory, MiB, of the GPUs ``ids`` (indices) from ``nvidia-smi
    --query-gpu=index,memory.total --format=csv,noheader,nounits``; 0 when unknown (MIG
    instances, which are not split, or output it cannot read)."""
    sizes: dict[str, int] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    found = [sizes[i] for i in ids if i in sizes]
    return min(found) if found and len(found) == len(ids) else 0


DEVICE_CHOICES = ("auto", "cpu", "gpu")


def detect_platform(device: str = "auto", cpu_devices: int = 2) -> Platform:
    """The Platform to plan for: GPUs if ``nvidia-smi`` sees any (or ``device="gpu"``), else CPU
    with ``cpu_devices`` logical devices (checked by :class:`Platform`)."""
    if device not in DEVICE_CHOICES:
        raise HarnessError(f"Received --device={device!r}; expected one of: {', '.join(DEVICE_CHOICES)}.")
    found = nvidia_gpus() if device != "cpu" else NvidiaGpus()
    if device == "gpu" and not found.ids:
        raise HarnessError(
            "Received --device=gpu, but nvidia-smi lists no GPU; expected --device cpu or auto."
        )
    # the co-tenant frameworks this interpreter can import: looked up, not imported (importing JAX
    # or PyTorch would cost seconds and memory in the parent)
    frameworks = tuple(name for name, f in FRAMEWORKS.items() if importlib.util.find_spec(f.module))
    bf16 = bf16_units(parse_cpuinfo(_read(Path("/proc/cpuinfo")) or "").flags)
    if not found.ids:
        return Platform("cpu", 0, cpu_devices, frameworks=frameworks, cpu_bf16=bf16)
    query = ("--query-gpu=index,memory.total", "--format=csv,noheader,nounits")
    memory = 0 if found.mig else parse_memory_mib(nvidia_smi(*query), found.ids)
    return Platform(
        "gpu",
        len(found.ids),
        cpu_devices,
        found.ids,
        found.mig,
        frameworks=frameworks,
        gpu_memory_mib=memory,
        cpu_bf16=bf16,
    )


def git_sha() -> str:
    """Short commit of the suite's checkout, or "" outside git."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def proc_bytes(path: str, key: str) -> int | None:
    """The ``KEY: N kB`` line of a /proc file, bytes; None where unknown (no file, no such line)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(f"{key}:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_memory_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """The memory the OS says new processes can use (``MemAvailable``), bytes; None where unknown."""
    return proc_bytes(meminfo, "MemAvailable")


DISTRIBUTIONS = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly"),
    "keras": ("keras", "keras-nightly"),
}
"""The installed distributions that provide each package, in the order looked for."""


def installed_version(package: str) -> str:
    """The installed version of ``package`` (:data:`DISTRIBUTIONS`) from its metadata, without
    importing it; "" when not installed."""
    from importlib import metadata

    for name in DISTRIBUTIONS.get(package, (package,)):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return ""


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name (/proc/cpuinfo, :func:`parse_cpuinfo`), or the platform module's guess."""
    import platform

    return parse_cpuinfo(_read(Path(cpuinfo)) or "").model or platform.processor() or platform.machine()


def machine(suite_version: str, host: HostMachine | None = None) -> dict[str, str]:
    """What a run's figures depend on, known in the parent: the CPU model and count, the GPUs, the
    suite, TensorFlow and Keras versions, the machine's facts (``MachineFacts.to_json``; a resumed
    run must match the journal's in all of these) and, with ``host``, its name (the rows' machine:
    a resumed run keeps it). ``host``: the run's machine (default: this host's facts, no name)."""
    facts = host.facts if host is not None else machine_facts()
    return {
        "cpu": cpu_model(),
        "cpus": str(os.cpu_count() or 0),
        "gpus": ", ".join(gpu_models()),
        "suite": suite_version,
        "tensorflow": installed_version("tensorflow"),
        "keras": installed_version("keras"),
        "facts": facts.to_json(),
        **({"name": host.name} if host is not None else {}),
    }


def gpu_models(listing: str | None = None) -> list[str]:
    """The model of each GPU ``nvidia-smi -L`` lists (``listing``: its output; default: run it),
    e.g. ``NVIDIA H100 80GB HBM3``; empty without the tool or a GPU."""
    import re

    if listing is None:
        listing = nvidia_smi("-L")
    return re.findall(r"^GPU \d+: (.+?) \(UUID", listing, flags=re.M)


@dataclass(frozen=True)
class CpuInfo:
    """The first processor's entry of ``/proc/cpuinfo``: ``model name``, ``cpu family``, ``model``
    and ``stepping`` as written ("" where absent, e.g. on ARM), and its feature flags, sorted."""

    model: str = ""
    family: str = ""
    model_number: str = ""
    stepping: str = ""
    flags: tuple[str, ...] = ()


def parse_cpuinfo(text: str) -> CpuInfo:
    """:class:`CpuInfo` of ``/proc/cpuinfo``'s first processor (``flags`` on x86, ``Features`` on
    ARM)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if found:
                break  # the first processor's entry ends at its blank line
            continue
        key, sep, value = line.partition(":")
        if sep:
            found.setdefault(key.strip().lower(), value.strip())
    flags = found.get("flags") or found.get("features") or ""
    return CpuInfo(
        found.get("model name", ""),
        found.get("cpu family", ""),
        found.get("model", ""),
        found.get("stepping", ""),
        tuple(sorted(set(flags.split()))),
    )


def parse_cgroups(text: str) -> dict[str, str]:
    """``/proc/self/cgroup`` as controller -> the process's cgroup path: cgroup v1 lines
    (``4:cpu,cpuacct:/a``) give one entry per controller, the v2 line (``0::/a``) the key ""."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2].strip()
    return out


def parse_cpu_max(text: str) -> float:
    """CPUs of a cgroup v2 ``cpu.max`` (``QUOTA PERIOD`` in microseconds), CPUs; 0.0: no quota
    (``max``) or unreadable."""
    parts = text.split()
    return parse_cfs_quota(parts[0], parts[1] if len(parts) > 1 else "100000") if parts else 0.0


def parse_cfs_quota(quota: str, period: str) -> float:
    """CPUs of a cgroup v1 ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` (microseconds each),
    CPUs; 0.0: no quota (``-1``) or unreadable."""
    try:
        q, p = float(quota.strip()), float(period.strip())
    except ValueError:
        return 0.0
    return q / p if q > 0 and p > 0 else 0.0


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _ancestors(path: str) -> list[str]:
    """``/a/b`` -> ``["a/b", "a", ""]``: the cgroup and its parents up to the root, relative."""
    parts = [p for p in path.strip("/").split("/") if p]
    return ["/".join(parts[:k]) for k in range(len(parts), -1, -1)]


def cpu_quota(cgroups: Mapping[str, str], root: Path = Path("/sys/fs/cgroup")) -> float:
    """The CPUs the process's cgroup quota allows (the smallest over the cgroup and its parents,
    each of which caps it), CPUs; 0.0: no quota. ``cgroups``: :func:`parse_cgroups`; ``root``:
    where the cgroup file systems are mounted. A v1 ``cpu`` controller (under ``cpu/`` or
    ``cpu,cpuacct/``) is read where the process has one, else the v2 hierarchy's ``cpu.max``."""
    found: list[float] = []
    if "cpu" in cgroups:
        for mount in ("cpu", "cpu,cpuacct"):
            for rel in _ancestors(cgroups["cpu"]):
                folder = root / mount / rel
                quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
                if quota is not None and period is not None:
                    found.append(parse_cfs_quota(quota, period))
            if found:
                break
    elif "" in cgroups:
        for rel in _ancestors(cgroups[""]):
            text = _read(root / rel / "cpu.max")
            if text is not None:
                found.append(parse_cpu_max(text))
    quotas = [q for q in found if q > 0]
    return min(quotas) if quotas else 0.0


def parse_cache_size_kib(text: str) -> int:
    """A cache's ``size`` file (``32K``, ``1M``, ``512``: bytes), KiB; 0 when unreadable."""
    text = text.strip().upper()
    scale = {"K": 1, "M": 1024, "G": 1024 * 1024}
    try:
        if text and text[-1] in scale:
            return int(text[:-1]) * scale[text[-1]]
        return int(text) // 1024
    except ValueError:
        return 0


CACHE_KINDS = {"data": "d", "instruction": "i", "unified": ""}
"""A cache's ``type`` -> the letter after its level (``L1d``, ``L1i``, ``L2``)."""


def caches_text(entries: list[tuple[str, str, str]]) -> str:
    """One core's caches from each ``index*`` folder's (``level``, ``type``, ``size``), in level
    order: ``L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 16384 KiB``; "" when none is readable."""
    out = []
    for level, kind, size in entries:
        kib = parse_cache_size_kib(size)
        letter = CACHE_KINDS.get(kind.strip().lower())
        if level.strip().isdigit() and kib and letter is not None:
            out.append((int(level), letter, kib))
    return ", ".join(f"L{lv}{letter} {kib} KiB" for lv, letter, kib in sorted(out))


def read_caches(folder: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> str:
    """:func:`caches_text` of ``folder``'s ``index*`` folders ("" where there are none)."""
    entries = []
    for index in sorted(folder.glob("index*")):
        level, kind, size = (_read(index / name) for name in ("level", "type", "size"))
        if level is not None and kind is not None and size is not None:
            entries.append((level, kind, size))
    return caches_text(entries)


@dataclass(frozen=True)
class GpuFacts:
    """Each GPU's name, the smallest GPU's memory (MiB; 0: none or unknown), the driver."""

    names: tuple[str, ...] = ()
    memory_mib: int = 0
    driver: str = ""


def parse_gpu_query(text: str) -> GpuFacts:
    """The GPUs of ``nvidia-smi --query-gpu=name,memory.total,driver_version
    --format=csv,noheader,nounits`` (one ``name, MiB, driver`` line per GPU)."""
    names, sizes, drivers = [], [], []
    for line in text.splitlines():
        parts = [p.strip() for p in line.rsplit(",", 2)]
        if len(parts) != 3 or not parts[0]:
            continue
        names.append(parts[0])
        if parts[1].isdigit():
            sizes.append(int(parts[1]))
        drivers.append(parts[2])
    complete = bool(names) and len(sizes) == len(names)
    return GpuFacts(tuple(names), min(sizes) if complete else 0, drivers[0] if drivers else "")


GPU_QUERY = ("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits")


def gpu_query() -> str:
    """``nvidia-smi``'s :data:`GPU_QUERY` output ("" without the tool or a driver)."""
    return nvidia_smi(*GPU_QUERY)


def usable_cores() -> int:
    """Logical CPUs this process may run on (its affinity), cores."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 0


def machine_facts(
    cpuinfo: Path = Path("/proc/cpuinfo"),
    meminfo: Path = Path("/proc/meminfo"),
    cgroup: Path = Path("/proc/self/cgroup"),
    cgroup_root: Path = Path("/sys/fs/cgroup"),
    caches: Path = Path("/sys/devices/system/cpu/cpu0/cache"),
    cores: int | None = None,
    gpus: str | None = None,
) -> MachineFacts:
    """This host's :class:`MachineFacts`, read off the files given (tests pass fixtures):
    ``cores`` (default: :func:`usable_cores`), ``gpus``: :data:`GPU_QUERY`'s output (default: run
    ``nvidia-smi``; no GPU without it). A file it cannot read leaves its facts unknown."""
    cpu = parse_cpuinfo(_read(cpuinfo) or "")
    gpu = parse_gpu_query(gpu_query() if gpus is None else gpus)
    return MachineFacts(
        cpu_model=cpu.model,
        cpu_family=cpu.family,
        cpu_model_number=cpu.model_number,
        cpu_stepping=cpu.stepping,
        cpu_flags=" ".join(cpu.flags),
        cores=usable_cores() if cores is None else cores,
        cpu_quota=cpu_quota(parse_cgroups(_read(cgroup) or ""), cgroup_root),
        caches=read_caches(caches),
        memory_gib=round((proc_bytes(str(meminfo), "MemTotal") or 0) / 2**30),
        gpus=gpu.names,
        gpu_memory_mib=gpu.memory_mib,
        gpu_driver=gpu.driver,
    )


INSTANCE_FILES = (Path("/sys/class/dmi/id/product_uuid"), Path("/proc/sys/kernel/random/boot_id"))
"""What tells one host instance from another: a VM's DMI product UUID (cloud instances have their
own), else the boot's id (a fresh VM boots anew; a rebooted one counts as another instance)."""


def instance_id(files: tuple[Path, ...] = INSTANCE_FILES) -> str:
    """6 hex digits of a hash of the first readable of ``files`` ("" where none is)."""
    text = next((t for f in files if (t := (_read(f) or "").strip())), "")
    return hashlib.sha256(text.encode()).hexdigest()[:6] if text else ""


@dataclass(frozen=True)
class HostMachine:
    """The machine a run measures on, as its rows record it: the name a person calls it by
    (``--machine NAME``, else :attr:`MachineFacts.default_name`), its facts and its instance."""

    name: str
    facts: MachineFacts
    instance: str = ""

    def stamp(self, run: RunInfo) -> RunInfo:
        """``run`` with this machine's columns: its name, id, facts and the protocol's version."""
        return replace(
            run,
            machine=self.name,
            machine_id=self.facts.short_id,
            instance_id=self.instance or None,
            machine_facts=self.facts.to_json(),
            protocol_version=PROTOCOL_VERSION,
        )


def this_machine(name: str | None = None, facts: MachineFacts | None = None) -> HostMachine:
    """This host under ``name`` (default: its facts' default name); ``facts``: already read (default:
    :func:`machine_facts`)."""
    facts = machine_facts() if facts is None else facts
    return HostMachine(name or facts.default_name, facts, instance_id())
