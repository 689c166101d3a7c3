"""Who used the host's CPUs during a turn (:mod:`harness.launch.instances.turns`): the member, the run's other
processes, or something else. Around a turn the coordinator takes a :class:`Snapshot` (busy and
steal time from ``/proc/stat``; each process's CPU time, parent, name and kernel-thread flag from
``/proc/<pid>/stat``), and :func:`attribute` splits the busy time between two snapshots
(:class:`CpuUse`). Only another program disturbs a turn (:func:`harness.formulas.turns.is_disturbed`;
what an idle GPU host shows: docs/explanation/gpus.md, section 1). CPU seconds, resolution one tick
(10 ms) per CPU. ``/proc`` is read by hand: psutil's snapshot takes 5.5 ms against 1.0 ms, has no
kernel-thread flag, and the GPU hosts' offline bundle lacks it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

BUSY_FIELDS = slice(0, 8)
"""/proc/stat's first cpu line: user, nice, system, idle, iowait, irq, softirq, steal (guest time
is already in user): all but idle and iowait are busy."""
STEAL = 7
"""The steal field's index in :data:`BUSY_FIELDS`."""
PF_KTHREAD = 0x00200000
"""The kernel-thread bit of ``/proc/<pid>/stat``'s flags (include/linux/sched.h)."""


def _tick() -> int:
    return os.sysconf("SC_CLK_TCK")


def host_cpu_seconds(stat: str = "/proc/stat") -> tuple[float, float] | None:
    """CPU seconds since boot, summed over the host's CPUs: (busy, the hypervisor's steal among
    them) from ``/proc/stat``; None where unknown. Resolution: one clock tick (10 ms)."""
    try:
        with open(stat) as f:
            fields = f.readline().split()[1:]
        ticks = [int(v) for v in fields[BUSY_FIELDS]]
    except (OSError, ValueError):
        return None
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / _tick(), ticks[STEAL] / _tick()


@dataclass(frozen=True)
class ProcessCpu:
    """One process as ``/proc/<pid>/stat`` shows it: parent pid, name, CPU seconds so far (user +
    system, all threads), whether it is a kernel thread, its start time (clock ticks after boot:
    with the pid, what tells a process from a later one that got the same pid) and the CPU seconds
    of its children that ended and were waited for (``children_s``)."""

    ppid: int
    name: str
    cpu_s: float
    kernel: bool = False
    start: int = 0
    children_s: float = 0.0


def read_process(pid: int, proc: str = "/proc") -> ProcessCpu | None:
    """Process ``pid`` (None when it is gone or unreadable)."""
    try:
        fd = os.open(f"{proc}/{pid}/stat", os.O_RDONLY)  # os.read: a third of open()'s cost
        try:
            text = os.read(fd, 4096).decode(errors="replace")
        finally:
            os.close(fd)
        head, rest = text.rsplit(")", 1)
        fields = rest.split()
        name = head.split("(", 1)[1]
        # fields after the name: state ppid pgrp session tty tpgid flags (6) ... utime (11) stime (12)
        # cutime (13) cstime (14) ... starttime (19)
        tick = _tick()
        return ProcessCpu(
            int(fields[1]),
            name,
            (int(fields[11]) + int(fields[12])) / tick,
            bool(int(fields[6]) & PF_KTHREAD),
            int(fields[19]),
            (int(fields[13]) + int(fields[14])) / tick,
        )
    except (OSError, ValueError, IndexError):
        return None


def process_table(proc: str = "/proc") -> dict[int, ProcessCpu]:
    """Every process on the host, by pid (about 2 ms per hundred processes on the 2-core VM)."""
    table: dict[int, ProcessCpu] = {}
    try:
        entries = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return table
    for name in entries:
        p = read_process(int(name), proc)
        if p is not None:
            table[int(name)] = p
    return table


@dataclass(frozen=True)
class Snapshot:
    """The host's busy CPU seconds (None where unknown), every process, the time it was taken
    (s, ``time.monotonic``) and the host's steal CPU seconds."""

    busy_s: float | None
    processes: Mapping[int, ProcessCpu] = field(default_factory=dict)
    at_s: float = 0.0
    steal_s: float = 0.0

    @classmethod
    def take(
        cls, clock: Callable[[], float], first: bool, proc: str = "/proc", stat: str = "/proc/stat"
    ) -> Snapshot:
        """Read the host now (``clock``: monotonic seconds). The process scan costs the parent
        CPU (about 2 ms per hundred processes): the snapshot before a turn (``first``) scans and
        then reads the host and the clock, the one after reads them and then scans, so neither
        scan falls between the two host readings."""
        table = process_table(proc) if first else {}
        host, at = host_cpu_seconds(stat), clock()
        table = table if first else process_table(proc)
        busy, steal = (None, 0.0) if host is None else host
        return cls(busy, table, at, steal)


def descendants(processes: Mapping[int, ProcessCpu], root: int) -> set[int]:
    """``root`` and every process below it (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for pid, p in processes.items():
        children.setdefault(p.ppid, []).append(pid)
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds between two snapshots: ``member_s``, the member's own processes (every task of it,
    its servers included); ``run_s``, the run's other processes (every descendant of the parent that
    is not the member); ``other_s``, the rest (kernel threads, interrupts, other programs, steal, and
    the tick sampling of ``/proc/stat`` beyond the processes' own, precise, times); ``foreign_s``, the
    part of it that is another program or the hypervisor (user-space processes outside the run, plus
    steal), the one of those that used the most (``busiest``: "name[pid]" or "steal", and its
    ``busiest_s``) and the CPUs left idle on average (``idle_cpus``; NaN where unknown), over ``span_s``."""

    member_s: float
    run_s: float
    other_s: float
    idle_cpus: float = float("nan")
    busiest: str = ""
    busiest_s: float = 0.0
    foreign_s: float = float("nan")
    span_s: float = float("nan")
    """Wall seconds between the two host readings."""


def _delta(before: Mapping[int, ProcessCpu], after: Mapping[int, ProcessCpu], pid: int) -> float:
    """CPU seconds ``pid`` used between the snapshots (from 0 for a process born in between, told
    from an earlier one of the same pid by its start time; a process gone by the second snapshot:
    0, its time falls to ``other_s``)."""
    if pid not in after:
        return 0.0
    start = before[pid].cpu_s if pid in before and before[pid].start == after[pid].start else 0.0
    return max(after[pid].cpu_s - start, 0.0)


def _reaped(before: Mapping[int, ProcessCpu], after: Mapping[int, ProcessCpu], pid: int) -> float:
    """CPU seconds of children ``pid`` waited for between the snapshots (a short-lived program's
    time, e.g. a build's compilers under ``make``); 0 for a process born in between."""
    if pid not in after or pid not in before or before[pid].start != after[pid].start:
        return 0.0
    return max(after[pid].children_s - before[pid].children_s, 0.0)


def attribute(
    before: Snapshot,
    after: Snapshot,
    member: Iterable[int],
    root: int,
    cpus: int,
    member_reported_s: float = 0.0,
) -> CpuUse:
    """Split the host's busy time between ``before`` and ``after`` (:class:`CpuUse`).
    ``member``: the member's pids, whose descendants (a compiler it started) count as the member
    too (none known: ``member_reported_s``, the CPU seconds its processes reported, is the
    member's share); ``root``: the run's parent pid; ``cpus``: the CPUs this process may run on,
    for ``idle_cpus``. Other programs' time includes the children they waited for in between."""
    b, a = before.processes, after.processes
    pids = set(member)
    own = set().union(*(descendants(a, p) | descendants(b, p) for p in pids)) if pids else set()
    run = (descendants(a, root) | descendants(b, root)) - own
    member_s = sum(_delta(b, a, p) for p in own) if own else member_reported_s
    run_s = sum(_delta(b, a, p) for p in run)
    if not own:
        run_s = max(run_s - member_reported_s, 0.0)
    if before.busy_s is None or after.busy_s is None:
        return CpuUse(member_s, run_s, 0.0)
    busy = after.busy_s - before.busy_s
    wall = after.at_s - before.at_s
    idle = cpus - busy / wall if wall > 0 else float("nan")
    programs = {
        f"{a[p].name}[{p}]": _delta(b, a, p) + _reaped(b, a, p)
        for p in a
        if p not in run and p not in own and not a[p].kernel
    }
    programs["steal"] = max(after.steal_s - before.steal_s, 0.0)
    other = max(busy - member_s - run_s, 0.0)
    foreign = sum(programs.values())
    top = max(programs, key=programs.__getitem__)
    name, top_s = ("", 0.0) if programs[top] <= 0 else (top, programs[top])
    return CpuUse(member_s, run_s, other, idle, name, top_s, foreign, wall)
