"""One measuring run per machine: a machine-wide lock held by ``run``, ``ab``, ``nightly`` and
``bisect`` from their first timed process to their last (turns assume the whole machine, whatever
the results folder). It is ``flock`` on one file (:data:`LOCK_ENV`, default
``<tmp>/tf-strategy-bench.lock``), released by the kernel however its holder dies, and naming the
holder (pid, command line, start, results folder) to a second run. Only the parent holds it (not
inherited); a real cluster's chief holds it on its machine, peers and servers none. By hand, not
the ``filelock`` package, which truncates the file on every attempt (erasing the holder's name)."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import EXIT_FAILURE, HarnessError

LOCK_ENV = "HARNESS_LOCK"
"""The lock file's path (default: :func:`default_path`); tests point it at their own file."""

POLL_S = 2.0
"""How often a run waiting for the lock (``--wait-lock``) tries again (s)."""


def command_line() -> str:
    """This process's command, as a user would type it: ``python -m harness ...``."""
    return " ".join(["python", "-m", "harness", *sys.argv[1:]])


def default_path() -> Path:
    """``$HARNESS_LOCK``, or ``tf-strategy-bench.lock`` in the machine's temporary folder."""
    return Path(os.environ.get(LOCK_ENV) or Path(tempfile.gettempdir()) / "tf-strategy-bench.lock")


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the lock: as written in the lock file."""

    pid: int
    command: str
    since: str
    out: str

    def text(self) -> str:
        return f"pid {self.pid} (`{self.command}`, since {self.since}, results -> {self.out})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holder(path: Path) -> Holder | None:
    """The holder written in the lock file, or None when it holds nothing readable."""
    try:
        data: dict[str, Any] = json.loads(path.read_text() or "{}")
        return Holder(int(data["pid"]), str(data["command"]), str(data["since"]), str(data["out"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class MachineLock:
    """The machine-wide measuring lock; :meth:`acquire`, then :meth:`release` (or ``with``)."""

    def __init__(self, out: Path, path: Path | None = None, command: str | None = None) -> None:
        self.path = path or default_path()
        self.out = out
        self.command = command or command_line()
        self._fd = -1

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:  # whoever creates it lets every user's runs take it later
            os.fchmod(fd, 0o666)
        except OSError:
            pass
        return fd

    def _try(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def acquire(
        self,
        wait: bool = False,
        say: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Take the lock; when another run holds it: wait for it (``wait``, saying so once) or raise
        a HarnessError naming the holder. A lock file naming a process that is gone (its lock was
        released when it died) is taken over, and said so."""
        fd = self._open()
        waited = False
        while not self._try(fd):
            holder = read_holder(self.path)
            who = holder.text() if holder else "another process"
            if not wait:
                os.close(fd)
                raise HarnessError(
                    f"another measuring run holds this machine: {who}. Two runs on one machine "
                    f"spoil each other's figures; wait for it to end, or pass --wait-lock to queue "
                    f"behind it (lock: {self.path})",
                    EXIT_FAILURE,
                )
            if not waited:
                say(f"waiting for the machine: {who} is measuring (lock: {self.path})")
                waited = True
            sleep(POLL_S)
        previous = read_holder(self.path)
        if previous is not None and previous.pid != os.getpid() and not _alive(previous.pid):
            say(f"took over the lock of pid {previous.pid}, which is no longer running")
        self._fd = fd
        since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        data = {"pid": os.getpid(), "command": self.command, "since": since, "out": str(self.out)}
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps(data).encode(), 0)

    def release(self) -> None:
        if self._fd >= 0:
            os.ftruncate(self._fd, 0)  # a lock file naming a pid is one its holder died holding
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> MachineLock:
        if self._fd < 0:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def taken(out: Path, wait: bool) -> MachineLock:
    """The lock for a run writing to ``out``, taken (:meth:`MachineLock.acquire`)."""
    lock = MachineLock(out)
    lock.acquire(wait)
    return lock
