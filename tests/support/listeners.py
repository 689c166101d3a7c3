"""Which TCP sockets processes listen on, read from ``/proc``: in the namespace of the reader
(``/proc/net/tcp``, ``tcp6``: the host's for the harness) and in each process's own
(``/proc/PID/net/tcp``), matched to the processes by their sockets' inodes (``/proc/PID/fd``).

How a local cluster's isolation is checked from outside it: a socket of one of its processes that
shows in the host's tables is reachable from the host's interfaces; in its own tables only, it is
not. :func:`parse` is pure; the rest reads ``/proc``.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass

LISTEN = "0A"
"""A listening socket's state in ``/proc/net/tcp``."""


@dataclass(frozen=True)
class Listener:
    """One listening TCP socket: its address (``0.0.0.0``, ``::``, ``127.0.0.1`` ...), port and
    inode (the key that ties it to a process's file descriptors)."""

    address: str
    port: int
    inode: int

    @property
    def loopback(self) -> bool:
        """Whether only this host can reach it (127.0.0.0/8, ::1, or ::ffff:127.x)."""
        ip = ipaddress.ip_address(self.address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_loopback

    @property
    def text(self) -> str:
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"


def _address(hex_ip: str) -> str:
    """``/proc/net/tcp``'s address field (32-bit words in host byte order) as text."""
    raw = bytes.fromhex(hex_ip)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET6 if len(raw) == 16 else socket.AF_INET, words)


def parse(table: str) -> list[Listener]:
    """The listening sockets of one ``/proc/net/tcp`` or ``tcp6`` table's text."""
    out = []
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == LISTEN:
            hex_ip, hex_port = fields[1].split(":")
            out.append(Listener(_address(hex_ip), int(hex_port, 16), int(fields[9])))
    return out


def _tables(folder: str) -> list[Listener]:
    found: list[Listener] = []
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{folder}/{name}") as f:
                found += parse(f.read())
        except OSError:
            continue
    return found


def socket_inodes(pid: int, proc: str = "/proc") -> set[int]:
    """The inodes of the sockets process ``pid`` holds open (none once it is gone)."""
    inodes = set()
    try:
        for fd in os.listdir(f"{proc}/{pid}/fd"):
            try:
                target = os.readlink(f"{proc}/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    except OSError:
        pass
    return inodes


def in_host(pids: Iterable[int], proc: str = "/proc") -> dict[int, list[Listener]]:
    """Per process, its listening sockets that show in the reader's namespace (``/proc/net``)."""
    host = _tables(f"{proc}/net")
    return {pid: [s for s in host if s.inode in socket_inodes(pid, proc)] for pid in pids}


def in_own(pids: Iterable[int], proc: str = "/proc") -> dict[int, list[Listener]]:
    """Per process, its listening sockets in its own namespace (``/proc/PID/net``)."""
    return {
        pid: [s for s in _tables(f"{proc}/{pid}/net") if s.inode in socket_inodes(pid, proc)] for pid in pids
    }


def descendants(root: int, proc: str = "/proc") -> set[int]:
    """Every live process below ``root`` (by the parent pid in ``/proc/PID/stat``)."""
    parents: dict[int, int] = {}
    for name in os.listdir(proc):
        if name.isdigit():
            try:
                with open(f"{proc}/{name}/stat") as f:
                    parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found
