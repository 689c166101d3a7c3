"""``python -m harness.worker.netns hold|join``: a network namespace with only loopback for one
local cluster (the contract: :mod:`harness.contract.isolation`).

``hold``: make the namespace (a plain network namespace where this process may, as root; else an
unprivileged user namespace with it), bring its loopback interface up, print the ready line and
keep it until stdin closes. ``join MODULE ARGS...``: join the namespaces :data:`NETNS_ENV` names,
then run ``python -m MODULE ARGS...`` (a fresh interpreter's way in; a forked worker calls
:func:`join` itself right after its fork). Joining a user namespace needs a process with one
thread: both ways join before anything starts a thread."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import runpy
import socket
import struct
import sys
from collections.abc import Mapping

from harness.contract.isolation import NETNS_ENV, NO_NAMESPACE_FAULT, join_paths

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def unshare(flags: int) -> None:
    """``unshare(2)``; OSError with the kernel's errno. The fault hook makes it fail with EPERM."""
    if NO_NAMESPACE_FAULT in (os.environ.get("HARNESS_INJECT_FAULT") or "").split(";"):
        raise OSError(errno.EPERM, "unshare: Operation not permitted (injected)")
    if _libc().unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"unshare: {os.strerror(code)}")


def join(paths: list[str]) -> None:
    """Join each namespace file in ``paths``, in order (``setns(2)``); OSError naming the file."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            if _libc().setns(fd, 0) != 0:
                code = ctypes.get_errno()
                raise OSError(code, f"setns {path}: {os.strerror(code)}")
        finally:
            os.close(fd)


def join_from(env: Mapping[str, str]) -> None:
    """Join the namespaces :data:`NETNS_ENV` names in ``env`` (nothing where it is unset or empty)."""
    join(join_paths(env.get(NETNS_ENV)))


def loopback_up() -> None:
    """Bring ``lo`` up in this process's network namespace (``SIOCSIFFLAGS``, as ``ip link set lo
    up`` does, without needing ``ip``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        (flags,) = struct.unpack_from("H", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request), 16)
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _map_ids() -> None:
    """In a new user namespace: this process's uid and gid map to themselves (so files keep their
    owners), with setgroups denied as the kernel requires of an unprivileged map."""
    uid, gid = os.getuid(), os.getgid()
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def make() -> list[str]:
    """Make this process's namespaces; the files a task joins, in order. A plain network
    namespace first (root: device access unchanged), else a user namespace with it."""
    me = f"/proc/{os.getpid()}/ns"
    try:
        unshare(CLONE_NEWNET)
        paths = [f"{me}/net"]
    except OSError as plain:
        if plain.errno != errno.EPERM:
            raise
        unshare(CLONE_NEWUSER | CLONE_NEWNET)
        _map_ids()
        paths = [f"{me}/user", f"{me}/net"]
    loopback_up()
    return paths


def hold() -> int:
    """The holder: make the namespace, say so, keep it until stdin closes. Exit 1 with one line on
    stderr where the system forbids it."""
    try:
        paths = make()
    except OSError as e:
        print(f"no network namespace: {e.strerror or e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps({"ready": os.getpid(), "join": paths}), flush=True)
    sys.stdin.buffer.read()
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["hold"]:
        return hold()
    if argv[:1] == ["join"] and len(argv) >= 2:
        join_from(os.environ)
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    print("usage: python -m harness.worker.netns hold | join MODULE [ARGS...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
