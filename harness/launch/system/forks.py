"""Fork servers, the parent's side (the channel: :mod:`harness.contract.forks`; the server, and why
the suite has its own: :mod:`harness.worker.forkserver`). While :func:`serving` is active,
:class:`harness.launch.system.process.Process` asks :func:`spawn` for each worker: the run's server for
its interpreter and environment (started on first use, kept for the run) forks it, read through a
:class:`Forked` handle like a ``subprocess.Popen``. With no server (none active, ``--no-fork``, one
that failed or died) :func:`spawn` returns None and the worker starts as a fresh interpreter.
Servers start from one long-lived thread: ``PR_SET_PDEATHSIG`` fires when the *thread* that forked
a child ends, and a group instance's member threads end with the instance."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.contract.forks import PROGRAMS, SERVER_MODULE, Spawn, server_env

READY_TIMEOUT_S = 300.0
"""Seconds a server may take to import TensorFlow and listen."""
REPLY_TIMEOUT_S = 60.0
"""Seconds a server may take to answer a request with the worker's pid."""


def die_with_parent() -> None:
    """In a child before exec: on Linux, get SIGKILL when the parent (thread) dies, even by
    SIGKILL, so a child in its own session never outlives the run."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_child(
    argv: list[str], env: Mapping[str, str], stdout: Any, stderr: Any, stdin: Any = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """``argv`` started in a session of its own that dies with this process (:func:`die_with_parent`)."""
    streams = {"stdin": stdin, "stdout": stdout, "stderr": stderr}
    return subprocess.Popen(argv, env=env, start_new_session=True, preexec_fn=die_with_parent, **streams)


class Forked:
    """A worker forked by a server, read like ``subprocess.Popen`` (``pid``, ``returncode``,
    ``poll``, ``wait``): its exit code comes on its connection to the server; a connection that
    closes without one means the server died (and the worker with it: SIGKILL)."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn, self.pid = conn, pid
        self.returncode: int | None = None
        self._buffer = b""

    def _take(self, timeout_s: float | None) -> bool:
        """Read what the server sent within ``timeout_s`` (None: until it says something);
        True once the exit code is known."""
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while self.returncode is None:
            left = None if end is None else max(end - time.monotonic(), 0.0)
            if not select.select([self.conn], [], [], left)[0]:
                return False
            chunk = self.conn.recv(4096)
            if not chunk:
                self.returncode = -signal.SIGKILL
                break
            self._buffer += chunk
            if b"\n" in self._buffer:
                self.returncode = int(json.loads(self._buffer.split(b"\n")[0])["exit"])
        self.conn.close()
        return True

    def poll(self) -> int | None:
        if self.returncode is None:
            self._take(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._take(timeout):
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode


class Server:
    """One fork server process and its socket."""

    def __init__(self, python: str, env: dict[str, str], folder: Path, name: str) -> None:
        self.path = str(folder / f"{name}.sock")
        self.log_path = folder / f"{name}.log"
        with open(self.log_path, "wb") as log:
            self.proc = start_child([python, "-m", SERVER_MODULE, self.path], env, subprocess.PIPE, log)

    def ready(self, timeout_s: float) -> bool:
        """Wait until the server listens (its ready line); False if it ended or took too long."""
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], timeout_s)[0]:
            return False
        line = self.proc.stdout.readline()
        return line.startswith(b'{"ready"')

    def spawn(self, request: Spawn) -> Forked | None:
        """Fork one worker; None when the server is gone or does not answer."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            conn.sendall((json.dumps(request) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                if not select.select([conn], [], [], REPLY_TIMEOUT_S)[0]:
                    raise OSError("no answer from the fork server")
                chunk = conn.recv(4096)
                if not chunk:
                    raise OSError("the fork server closed the connection")
                data += chunk
        except OSError:
            conn.close()
            return None
        return Forked(conn, int(json.loads(data)["pid"]))

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class ForkServers:
    """The run's servers, one per interpreter and server environment (:func:`server_env`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.servers: dict[tuple[str, tuple[tuple[str, str], ...]], Server | None] = {}
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="fork-servers")

    def _start(self, python: str, env: dict[str, str]) -> Server | None:
        server = Server(python, env, self.folder, f"server-{len(self.servers)}")
        if server.ready(READY_TIMEOUT_S):
            return server
        server.stop()
        tail = server.log_path.read_text(errors="replace").strip().splitlines()[-3:]
        self.failures.append(f"a fork server did not start ({' | '.join(tail)}); workers start fresh")
        return None

    def spawn(
        self, module: str, argv: list[str], env: dict[str, str], log_path: Path, python: str, out: Path | None
    ) -> Forked | None:
        """A process (``python -m module`` + ``argv``, whole environment ``env``) forked by its
        server, or None (the caller starts a fresh interpreter)."""
        shared = server_env(env)
        key = (python, tuple(sorted(shared.items())))
        with self._lock:
            if key not in self.servers:
                self.servers[key] = self._starter.submit(self._start, python, shared).result()
            server = self.servers[key]
        if server is None:
            return None
        request: Spawn = {
            "module": module,
            "argv": argv,
            "env": env,
            "log": str(log_path),
            "out": str(out or log_path),
            "cwd": os.getcwd(),
        }
        return server.spawn(request)

    def close(self) -> None:
        with self._lock:
            for server in self.servers.values():
                if server is not None:
                    server.stop()
            self.servers.clear()
        self._starter.shutdown()


_current: ForkServers | None = None


@contextlib.contextmanager
def serving(enabled: bool = True) -> Iterator[ForkServers | None]:
    """While active (and ``enabled``), workers are forked from the run's fork servers; every
    server is stopped on the way out."""
    global _current
    if not enabled or _current is not None:
        yield _current
        return
    with tempfile.TemporaryDirectory(prefix="harness-forks-") as folder:
        _current = ForkServers(Path(folder))
        try:
            yield _current
        finally:
            servers, _current = _current, None
            servers.close()
            for failure in dict.fromkeys(servers.failures):
                print(f"warning: {failure}", file=sys.stderr)


def spawn(
    module: str, argv: list[str], env: dict[str, str], log_path: Path, python: str, out: Path | None = None
) -> Forked | None:
    """``python -m module`` + ``argv`` forked while :func:`serving` is active and ``module`` is one a
    server forks (:data:`harness.contract.forks.PROGRAMS`; its stdout to ``out``, None: its log),
    else None."""
    servers = _current
    if servers is None or module not in PROGRAMS:
        return None
    return servers.spawn(module, argv, env, log_path, python, out)
