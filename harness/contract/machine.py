"""What a machine is, as the parent records it with every run: the facts that tell machines apart
and the name a person calls it by (docs/explanation/statistics.md, "What is a machine"). Pure: no
I/O (``harness.launch.system.platform.machine_facts`` reads them off the host; ``harness.analysis.comparisons.machines``
reads them back from rows). Two VMs sold under one CPU name can differ 2x, so a machine is its facts
and its measured peak, never its name alone."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace

from harness.spec.protocol import bf16_units

PROTOCOL_VERSION = 1
"""What a figure means: bump it in the commit that changes how a throughput, a CI or a ratio is
measured (windows, processes, turns, the peak), so that runs of suite versions whose figures do
not mean the same thing are never compared across machines. Version 1: per-process figures of
~0.2 s windows in turns, medians over fresh processes, the float32 matmul peak (every run of the
suite is version 1; rows that do not record it read as 1: :mod:`harness.results.layouts`)."""


@dataclass(frozen=True)
class MachineFacts:
    """The facts that tell machines apart. Empty strings and zeros: unknown."""

    cpu_model: str = ""
    """``model name`` of /proc/cpuinfo, e.g. ``AMD EPYC``."""
    cpu_family: str = ""
    """``cpu family`` of /proc/cpuinfo (x86), e.g. ``26``."""
    cpu_model_number: str = ""
    """``model`` of /proc/cpuinfo, e.g. ``2``."""
    cpu_stepping: str = ""
    cpu_flags: str = ""
    """The CPU's feature flags, sorted, space-separated (``avx512f``, ``amx_tile``, ...)."""
    cores: int = 0
    """Logical CPUs this process may run on (its affinity), cores."""
    cpu_quota: float = 0.0
    """CPUs a cgroup quota allows (``cpu.max`` or ``cpu.cfs_quota_us``/``cpu.cfs_period_us``), CPUs;
    0: no quota."""
    caches: str = ""
    """Per-core cache sizes, e.g. ``L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 16384 KiB``."""
    memory_gib: int = 0
    """Physical memory (``MemTotal``), rounded to GiB."""
    gpus: tuple[str, ...] = ()
    """Each GPU's (or MIG instance's) name, e.g. ``NVIDIA H100 80GB HBM3``."""
    gpu_memory_mib: int = 0
    """The smallest GPU's memory, MiB (0: no GPU or unknown)."""
    gpu_driver: str = ""
    """The NVIDIA driver's version."""
    partial: bool = False
    """True: a run from before the suite recorded its machine facts, read back with the CPU model,
    cores and GPU its rows hold (:mod:`harness.results.layouts`); the rest, CPU flags included,
    unknown. Not a fact: left out of :attr:`short_id` and, where False, of :meth:`to_json`."""

    @property
    def bf16_units(self) -> tuple[str, ...]:
        """The CPU flags that show bfloat16 units (:func:`harness.spec.protocol.bf16_units`)."""
        return bf16_units(self.cpu_flags.split())

    @property
    def short_id(self) -> str:
        """6 hex digits of a hash of every fact: equal facts, equal id."""
        return hashlib.sha256(replace(self, partial=False).to_json().encode()).hexdigest()[:6]

    @property
    def default_name(self) -> str:
        """``<GPU name> x<N>`` or ``<CPU model> <N> cores`` (and the quota), plus :attr:`short_id`."""
        if self.gpus:
            base = self.gpus[0] + (f" x{len(self.gpus)}" if len(self.gpus) > 1 else "")
        else:
            base = f"{self.cpu_model or 'unknown CPU'} {self.cores} core" + ("" if self.cores == 1 else "s")
            if self.cpu_quota:
                base += f" ({self.cpu_quota:g} CPU quota)"
        return f"{base} {self.short_id}"

    @property
    def words(self) -> str:
        """The facts in one line, e.g. ``AMD EPYC (family 23, model 49, stepping 0), 2 cores, no CPU
        quota, L1d 32 KiB, ..., 24 GiB, 117 CPU flags; no GPU``: doctor's and compare-hardware's."""
        ids = {"family": self.cpu_family, "model": self.cpu_model_number, "stepping": self.cpu_stepping}
        ident = ", ".join(f"{word} {value}" for word, value in ids.items() if value)
        cpu = (self.cpu_model or "unknown CPU") + (f" ({ident})" if ident else "")
        quota = f"a {self.cpu_quota:g}-CPU quota" if self.cpu_quota else "no CPU quota"
        memory, flags = f"{self.memory_gib} GiB" if self.memory_gib else "", len(self.cpu_flags.split())
        parts = [cpu, f"{self.cores} cores", quota, self.caches, memory, f"{flags} CPU flags"]
        gpus = (
            f"{len(self.gpus)} x {self.gpus[0]}, {self.gpu_memory_mib} MiB, driver {self.gpu_driver or '?'}"
            if self.gpus
            else "no GPU"
        )
        return ", ".join(p for p in parts if p) + f"; {gpus}"

    def differences(self, other: MachineFacts) -> list[str]:
        """The facts that differ, as ``name: mine / other`` (flags as what one has and not the other)."""
        out = []
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a == b:
                continue
            if f.name == "cpu_flags":
                only_a = sorted(set(a.split()) - set(b.split()))
                only_b = sorted(set(b.split()) - set(a.split()))
                out.append(f"cpu_flags: {' '.join(only_a[:4]) or '-'} / {' '.join(only_b[:4]) or '-'}")
            else:
                out.append(f"{f.name}: {a or '-'} / {b or '-'}")
        return out

    def to_json(self) -> str:
        data = asdict(self)
        if not self.partial:
            del data["partial"]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> MachineFacts:
        """The facts of :meth:`to_json`; keys this version does not know are left out."""
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in known}
        if "gpus" in kept:
            kept["gpus"] = tuple(kept["gpus"])
        return cls(**kept)
