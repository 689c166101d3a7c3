"""``python -m harness.worker.forkserver SOCKET``: a fork server (the channel:
:mod:`harness.contract.forks`). It imports TensorFlow, Keras and the worker's modules, checks that
TensorFlow's runtime has not started (a fork would copy a runtime whose threads are gone), and
forks one worker per request: its own session, dead with the server (dead with the harness:
``PR_SET_PDEATHSIG``), the requested environment, directory and log, running
:func:`harness.worker.main.main` as ``python -m harness.worker`` would and leaving with
``os._exit``; the server reaps it and reports its exit code. Not ``multiprocessing``'s forkserver,
which runs a pickled function in the server's own environment and directory."""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any

from harness.contract.forks import FORKED_ENV, PROGRAMS, Spawn
from harness.worker.netns import join_from

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def preload() -> None:
    """Import what every program it forks imports (TensorFlow, Keras, and through :data:`PROGRAMS`
    every worker module), then check that TensorFlow's runtime has not started."""
    import keras  # noqa: F401
    import tensorflow  # noqa: F401
    from tensorflow.python.eager import context

    for module in PROGRAMS.values():
        importlib.import_module(module)
    if context.context()._context_handle is not None:
        raise RuntimeError("TensorFlow's runtime started while importing: a fork would copy it")


def _child(request: Spawn, server_pid: int, sockets: list[socket.socket], fds: tuple[int, ...]) -> None:
    """In the forked worker: its session, parent-death signal, files, environment; then main.
    ``sockets`` and ``fds``: the server's, closed here."""
    code = 1
    try:
        for s in sockets:
            s.close()
        signal.set_wakeup_fd(-1)
        for fd in fds:
            os.close(fd)
        os.setsid()
        die_with_parent()
        if os.getppid() != server_pid:  # the server died between the fork and the prctl
            os._exit(1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _redirect(request)
        join_from(request["env"])  # one thread still: a user namespace lets it in
        os.environ.clear()
        os.environ.update({**request["env"], FORKED_ENV: str(server_pid)})
        os.chdir(request["cwd"])
        program = importlib.import_module(PROGRAMS[request["module"]])
        sys.argv = [request["module"], *request["argv"]]
        code = program.main(request["argv"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 -- whatever it was goes to the worker's log
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _redirect(request: Spawn) -> None:
    """stdin from /dev/null, stderr to the request's log, stdout to its ``out`` (the log, or a
    file of its own)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    log = os.open(request["log"], flags, 0o644)
    appended = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    out = log if request["out"] == request["log"] else os.open(request["out"], appended, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(log, 2)
    for fd in {log, out, null}:
        os.close(fd)


def _read_request(conn: socket.socket) -> Spawn | None:
    """The request line on a new connection (None when it closed first)."""
    with conn.makefile("rb") as reader:
        line = reader.readline()
    request: Spawn | None = json.loads(line) if line.endswith(b"\n") else None
    return request


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass  # the parent let go of this worker; it is reaped all the same


def serve(path: str) -> None:
    """Listen on ``path`` and fork a worker per request until the parent goes (or SIGTERM)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    workers: dict[int, socket.socket] = {}
    print(json.dumps({"ready": os.getpid()}), flush=True)
    watched: list[Any] = [server, wake_r]
    while True:
        readable = select.select(watched, [], [])[0]
        if wake_r in readable:
            os.read(wake_r, 4096)
        if server in readable:
            conn, _ = server.accept()
            request = _read_request(conn)
            if request is None:
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            me = os.getpid()
            pid = os.fork()
            if pid == 0:
                _child(request, me, [server, conn, *workers.values()], (wake_r, wake_w))
            workers[pid] = conn
            _send(conn, {"pid": pid})
        _reap(workers)


def _reap(workers: dict[int, socket.socket]) -> None:
    """Report and forget every worker that has exited."""
    while workers:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = workers.pop(pid, None)
        if conn is not None:
            _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
            conn.close()


def main(argv: list[str]) -> int:
    (path,) = argv
    preload()
    serve(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
