"""The one handle on a child process that every launcher uses (single cell, local cluster,
co-tenants, real-cluster tasks, doctor probes): :class:`Process` (docs/explanation/multi-worker.md,
"Faults and deadlines"). A child starts in its own session and dies with the parent; it reports
JSON lines to an events file, its other output goes to a log. Its launcher moves it through named
phases (:class:`Phase`), each with a :class:`Deadline`; :meth:`Process.stop` sends SIGTERM to the
group and SIGKILL after ``KILL_GRACE_S``; :meth:`Process.failure` says what went wrong."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

import harness
from harness.contract.events import EventLine
from harness.contract.isolation import joined_argv
from harness.contract.job import WORKER_ENV, Job, WorkerOptions
from harness.contract.turns import MEMBER_ENV, TURNS_ENV
from harness.launch.system import forks
from harness.launch.system.platform import proc_bytes
from harness.spec.protocol import Platform

KILL_GRACE_S = 5.0
"""Seconds between SIGTERM and SIGKILL."""
HARNESS_ROOT = Path(harness.__file__).resolve().parents[1]
"""The folder holding the ``harness`` package (put on PYTHONPATH for another interpreter)."""
POLL_S = 0.1
"""Seconds between two looks at a child's events and exit status."""
LOG_TAIL_LINES = 12


class Phase(StrEnum):
    """What a child is doing; each phase has its own deadline."""

    STARTUP = "start-up (import TensorFlow, set up devices)"
    RENDEZVOUS = "rendezvous (every task joining the cluster)"
    JOIN = "rendezvous (joining the cluster)"
    """One task of a cluster the scheduler started, joining it."""
    CELL = "cell"
    SHUTDOWN = "shutdown"
    PROBE = "probe"


@dataclass
class Deadline:
    """The current phase (with a detail, e.g. the cell id) and when it must be over (monotonic s)."""

    phase: Phase
    limit_s: float
    detail: str = ""
    ends: float = field(init=False)

    def __post_init__(self) -> None:
        self.ends = time.monotonic() + self.limit_s

    def enter(self, phase: Phase, limit_s: float, detail: str = "") -> None:
        self.phase, self.limit_s, self.detail = phase, limit_s, detail
        self.ends = time.monotonic() + limit_s

    @property
    def overdue(self) -> bool:
        return time.monotonic() > self.ends

    @property
    def text(self) -> str:
        return f"{self.phase} {self.detail}".strip()

    def passed(self) -> str:
        return f"deadline passed: {self.text} took over {self.limit_s:g} s"


def signal_text(code: int) -> str:
    """``exit code N`` or ``signal SIGKILL`` for a child's return code."""
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


LIVE: dict[int, Process] = {}
"""Every child started and not yet stopped, by pid (found by what their environment says, e.g. a
group instance's processes: :func:`instance_processes`)."""
LIVE_LOCK = threading.Lock()


class Process:
    """One child process (``python`` + ``argv``, ``env`` added to ours less the names in ``unset``):
    its events, its log, its phase and deadline (see the module docstring)."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        log_path: Path,
        events_path: Path,
        events_on_stdout: bool = False,
        deadline: Deadline | None = None,
        python: str | None = None,
        fork: bool = False,
        unset: Collection[str] = (),
    ) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        events_path.touch()
        self.log_path, self.events_path = log_path, events_path
        self.deadline = deadline or Deadline(Phase.STARTUP, float("inf"))
        self._offset, self._partial = 0, ""
        self.env = {k: v for k, v in {**os.environ, **WORKER_ENV, **env}.items() if k not in unset}
        python = python or sys.executable
        stdout = events_path if events_on_stdout else None
        forked = forks.spawn(argv[1], argv[2:], self.env, log_path, python, stdout) if fork else None
        self.proc: subprocess.Popen[bytes] | forks.Forked
        if forked is not None:
            self.proc = forked
        else:
            with open(log_path, "wb") as log, open(events_path, "ab") as events:
                out, err = (events, log) if events_on_stdout else (log, subprocess.STDOUT)
                self.proc = forks.start_child([python, *joined_argv(argv, self.env)], self.env, out, err)
        with LIVE_LOCK:
            LIVE[self.proc.pid] = self
        self.peak_rss = 0
        """The most resident memory seen of the process (bytes: ``VmHWM``, sampled while it runs)."""
        self.memory_cap_gib = 0.0
        """``--worker-memory-gib`` where the worker runs under it (0: no cap)."""
        self._sampled = 0.0

    def read(self) -> list[dict[str, Any]]:
        """The complete JSON lines appended since the last call (other lines are skipped)."""
        with open(self.events_path) as f:
            f.seek(self._offset)
            chunk = f.read()
            self._offset = f.tell()
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()
        out: list[dict[str, Any]] = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def events(self) -> list[EventLine]:
        """:meth:`read` of a worker's events file: its lines are :class:`EventLine` records."""
        return cast(list[EventLine], self.read())

    @property
    def running(self) -> bool:
        alive = self.proc.poll() is None
        if alive:  # keep the resident high-water mark, at most every MEMORY_SAMPLE_S
            now = time.monotonic()
            if now - self._sampled >= MEMORY_SAMPLE_S:
                self._sampled = now
                self.peak_rss = max(self.peak_rss, proc_bytes(f"/proc/{self.proc.pid}/status", "VmHWM") or 0)
        return alive

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout_s: float | None = None) -> int | None:
        """Wait for the exit (at most ``timeout_s``); its return code, or None if still running."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def send(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the process group (to the process alone before it has its session: a
        forked worker sets it up first thing)."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, sig)

    def stop(self, grace_s: float = KILL_GRACE_S) -> str:
        """SIGTERM the process group, SIGKILL it after ``grace_s``; returns what it took."""
        try:
            if self.proc.poll() is not None:
                return "already exited"
            how = "SIGTERM"
            self.send(signal.SIGTERM)
            if self.wait(grace_s) is None:
                how = "SIGTERM, then SIGKILL"
                self.send(signal.SIGKILL)
                self.proc.wait()
            return how
        finally:
            with LIVE_LOCK:
                LIVE.pop(self.proc.pid, None)

    def tail(self, lines: int = LOG_TAIL_LINES, sep: str = " | ") -> str:
        """The last lines of the log."""
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return sep.join(line.strip() for line in text[-lines:])

    def failure(self, how: str, who: str = "worker") -> str:
        """Why this child ended without its result: its exit (``how`` == "already exited") or the
        deadline it passed and how it was stopped, with the tail of its log."""
        if how == "already exited":
            code = self.proc.poll()
            cause = f"{who} exited with {signal_text(code or 0)} during {self.deadline.text}"
            if code == -signal.SIGKILL:  # not ours: we stop with SIGTERM first
                cause += killed_text(self.peak_rss)
            elif self.memory_cap_gib and code in CRASHES:
                cause += capped_text(self.memory_cap_gib, self.peak_rss)
        else:
            cause = f"{self.deadline.passed()}; {who} stopped with {how}"
        return f"{cause}; {who} log {self.log_path}: {self.tail()}"


MEMORY_SAMPLE_S = 0.5
"""Seconds between two readings of a live child's resident memory."""


def killed_text(peak_rss: int) -> str:
    """What a SIGKILL the harness did not send says: the system killed the process, most likely
    for memory, at the resident memory last seen."""
    seen = f", its resident memory up to {peak_rss / 2**30:.2f} GiB when last seen" if peak_rss else ""
    return (
        f" (not sent by the harness: the system killed it, most likely the kernel's out-of-memory "
        f"killer{seen}; a smaller batch or fewer live processes (--max-live) may fit)"
    )


CRASHES = (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS)
"""How a worker whose allocation failed under its memory cap ends, where the allocation was not
TensorFlow's own (a library's ``new`` throws ``std::bad_alloc``, or a null pointer is used)."""


def capped_text(cap_gib: float, peak_rss: int) -> str:
    """What a crash of a worker under ``--worker-memory-gib`` most likely was."""
    seen = f"; its resident memory up to {peak_rss / 2**30:.2f} GiB when last seen" if peak_rss else ""
    return (
        f" (most likely out of memory: the worker's memory was capped at {cap_gib:g} GiB by "
        f"--worker-memory-gib, and a failed allocation outside TensorFlow's allocator crashes the "
        f"process instead of raising{seen})"
    )


def harness_path(env: Mapping[str, str]) -> str:
    """``PYTHONPATH`` for a child of ``env``: :data:`HARNESS_ROOT` first, then ``env``'s own."""
    return os.pathsep.join(filter(None, (str(HARNESS_ROOT), env.get("PYTHONPATH"))))


def nccl_log_env(platform: Platform, folder: Path, ours: Mapping[str, str]) -> dict[str, str]:
    """NCCL's INFO log into ``folder`` for GPU workers, so each records the transports NCCL chose
    (:mod:`harness.worker.nccl`); nothing on CPUs or where the user set NCCL_DEBUG."""
    if platform.device_kind != "gpu" or "NCCL_DEBUG" in ours:
        return {}
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT", "NCCL_DEBUG_FILE": str(folder / "nccl.%p.log")}


def worker_env(
    options: WorkerOptions, folder: Path, launch_env: Sequence[tuple[str, str]] = ()
) -> dict[str, str]:
    """Variables added to a worker's environment (or to another process that should share the
    workers' fork server: the peak's): its launcher's (``launch_env``: threads, TF_CONFIG), then
    the run's (ab: the side's), which a launcher's never override; NCCL's log into ``folder``; the
    harness on PYTHONPATH for another interpreter."""
    env = {**dict(launch_env), **dict(options.env)}
    env.update(nccl_log_env(options.platform, folder, {**os.environ, **env}))
    if options.python:  # another interpreter finds this harness through PYTHONPATH
        env["PYTHONPATH"] = harness_path(env)
    return env


def start_worker(job: Job, folder: Path, name: str, deadline: Deadline | None = None) -> Process:
    """``python -m harness.worker JOB EVENTS`` for ``job``, its files in ``folder`` and its log at
    ``job.options.log_dir / name.log``."""
    index = job.launch.index
    job_path, events_path = folder / f"job-{index}.json", folder / f"events-{index}.jsonl"
    job_path.write_text(json.dumps(job.to_json()))
    process = Process(
        ["-m", "harness.worker", str(job_path), str(events_path)],
        worker_env(job.options, folder, job.launch.env),
        job.options.log_dir / f"{name}.log",
        events_path,
        deadline=deadline,
        python=job.options.python,
        fork=True,
    )
    process.memory_cap_gib = job.options.settings.worker_memory_gib
    return process


def instance_processes(path: str, live: Mapping[int, Process] | None = None) -> dict[str, list[int]]:
    """The live processes started for the instance whose channel is ``path`` (the variable
    :data:`TURNS_ENV` in the environment they were given; ``live``: by default every child not
    yet stopped), by member key (:data:`MEMBER_ENV`): every task of a member, a parameter-server
    cell's servers included."""
    if live is None:
        with LIVE_LOCK:
            live = dict(LIVE)
    found: dict[str, list[int]] = {}
    for pid, proc in live.items():
        if proc.env.get(TURNS_ENV) == path:
            found.setdefault(proc.env.get(MEMBER_ENV, ""), []).append(pid)
    return found


def kill_live(pids: Collection[int]) -> list[int]:
    """SIGKILL the process group of each of ``pids`` not yet stopped (:data:`LIVE`); returns theirs."""
    with LIVE_LOCK:
        procs = [LIVE[pid] for pid in pids if pid in LIVE]
    for proc in procs:
        proc.send(signal.SIGKILL)
    return [proc.proc.pid for proc in procs]
