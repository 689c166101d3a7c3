"""The chief's run lease: how a parameter-server cluster's servers learn that the run is over.

``tf.distribute.Server.join()`` never returns and TensorFlow has no remote shutdown, and the chief's
TensorFlow process (hence its gRPC port) lives for one cell only, so the end of the run is signalled
out of band, beside TensorFlow's cluster runtime (which still carries all training traffic): the
chief's ``harness run`` process (which lives for the whole run and never imports TensorFlow)
listens on :func:`lease_address` (:class:`RunLease`); each server's ``harness run`` process connects
to it and blocks (:func:`wait_for_chief`). When the chief's run ends the chief sends
``finished <exit code>`` to every server and closes; a connection that closes without it (the chief
killed, its host gone: TCP keepalive) means the chief was lost. Plain TCP: no shared filesystem,
tasks on any hosts.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass
from types import TracebackType

from harness.launch.cluster import ClusterConfig, host_of
from harness.spec.strategies import Role

LEASE_GREETING = "harness-lease"
"""First word of the line the chief sends to a server that connects: ``harness-lease <digest>``
(:func:`cluster_digest`: a server of another cluster, or another program on the port, is told apart)."""
LEASE_SERVER = "server"
"""First word of the line a server answers with: ``server <task type> <task index>``."""
LEASE_FINISHED = "finished"
"""First word of the chief's last line: ``finished <exit code of the chief's harness run>``."""
LEASE_LINE_MAX = 256
"""Longest lease line, in bytes."""
LEASE_CONNECT_TIMEOUT_S = 600.0
"""Seconds a server keeps trying to reach the chief's lease before it gives up: the chief's start-up,
which on Kubernetes can include scheduling its pod and pulling its image (``srun --wait`` or the
job's time limit usually ends a server whose chief never comes sooner)."""
LEASE_RETRY_S = 1.0
"""Seconds between a server's attempts to connect while the lease is not there yet."""
LEASE_LINGER_S = 30.0
"""Seconds the chief, once its run is over, waits for servers that never connected."""
LEASE_IO_TIMEOUT_S = 10.0
"""Seconds either side waits to send or read a handshake line."""
LEASE_POLL_S = 0.2
"""Seconds between the chief's checks for new connections and for the end of its linger."""
LEASE_KEEPALIVE_S = (10, 5, 3)
"""TCP keepalive of a server's connection: idle seconds before the first probe, seconds between
probes, probes: a chief host that vanishes (no FIN ever arrives) is noticed within about 25 s."""


def lease_address(config: ClusterConfig) -> tuple[str, int]:
    """(host, port) of the chief's run lease: the chief's host, and one above the highest port any
    task of the cluster uses on that host (never one of the cluster's own TensorFlow ports; with
    SlurmClusterResolver: 8888 + the tasks on the chief's node)."""
    kind, index = config.chief_task
    host = host_of(config.jobs[kind][index])
    ports = [
        int(a.rsplit(":", 1)[1])
        for addresses in config.jobs.values()
        for a in addresses
        if host_of(a) == host
    ]
    return host, max(ports) + 1


def cluster_digest(config: ClusterConfig) -> str:
    """16 hex digits naming the cluster (every task's address): the same in every task."""
    return hashlib.sha256(json.dumps(config.spec).encode()).hexdigest()[:16]


def server_names(config: ClusterConfig) -> list[str]:
    """``"<type> <index>"`` of every task with the server role (none outside parameter-server
    clusters)."""
    return [
        f"{kind} {i}"
        for kind, addresses in config.spec
        for i in range(len(addresses))
        if ClusterConfig(config.spec, kind, i).role == Role.SERVER
    ]


def lease_line(kind: str, *fields: object) -> bytes:
    """One lease message: ``kind`` and ``fields`` separated by spaces, ending in a newline."""
    return (" ".join([kind, *map(str, fields)]) + "\n").encode()


def parse_lease_line(line: bytes) -> tuple[str, list[str]]:
    """(kind, fields) of one lease message; ValueError for an empty, unterminated or odd line."""
    if not line.endswith(b"\n"):
        raise ValueError(f"incomplete lease line {line!r}")
    words = line.decode("ascii", errors="replace").split()
    if not words:
        raise ValueError("empty lease line")
    return words[0], words[1:]


@dataclass(frozen=True)
class ChiefEnd:
    """How the chief's run ended, as a server learnt it from the lease. ``finished``: the chief said
    so (``code``: its exit code); otherwise the lease was lost or never reached (``code`` None)."""

    finished: bool
    code: int | None
    detail: str


class RunLease:
    """The chief's side of the run lease: listens on :func:`lease_address`'s port (every interface)
    for the whole run; :meth:`finish` tells every server that connected ``finished <code>``, waiting
    up to ``linger_s`` seconds for servers that have not connected yet, and closes. A context
    manager: leaving it without :meth:`finish` finishes with code 1. OSError when the port is busy.
    The sockets are not inherited by child processes, so only this process holds the lease."""

    def __init__(self, config: ClusterConfig, linger_s: float = LEASE_LINGER_S) -> None:
        self.host, self.port = lease_address(config)
        self._greeting = lease_line(LEASE_GREETING, cluster_digest(config))
        self._expected = set(server_names(config))
        self._linger_s = linger_s
        if socket.has_dualstack_ipv6():
            self._listener = socket.create_server(
                ("", self.port), family=socket.AF_INET6, dualstack_ipv6=True
            )
        else:
            self._listener = socket.create_server(("", self.port))
        self._listener.settimeout(LEASE_POLL_S)
        self._lock = threading.Lock()
        self._connected: dict[str, socket.socket] = {}
        self._seen: set[str] = set()
        self._code: int | None = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="run-lease", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(LEASE_IO_TIMEOUT_S)
            try:
                conn.sendall(self._greeting)
                kind, fields = parse_lease_line(conn.makefile("rb").readline(LEASE_LINE_MAX))
            except (OSError, ValueError):
                conn.close()
                continue
            if kind != LEASE_SERVER:
                conn.close()
                continue
            name, old = " ".join(fields), None
            with self._lock:
                self._seen.add(name)
                code = self._code
                if code is None:
                    old = self._connected.pop(name, None)
                    self._connected[name] = conn
            if code is not None:  # connected after the run ended: tell it at once
                _send_finished(conn, code)
            elif old is not None:
                old.close()

    def finish(self, code: int) -> list[str]:
        """Tell every server the run is over with ``code`` (the chief's exit code) and close the
        lease; returns the servers that never connected (after up to ``linger_s`` seconds)."""
        with self._lock:
            if self._code is not None:
                return []
            self._code = code
        deadline = time.monotonic() + self._linger_s
        try:
            while True:
                with self._lock:
                    missing = sorted(self._expected - self._seen)
                if not missing or time.monotonic() > deadline:
                    return missing
                time.sleep(LEASE_POLL_S)
        finally:  # (also when the linger is interrupted)
            with self._lock:
                connected, self._connected = self._connected, {}
            for conn in connected.values():
                _send_finished(conn, code)
            self._closed.set()
            self._thread.join()
            self._listener.close()

    def __enter__(self) -> RunLease:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish(1)


def _send_finished(conn: socket.socket, code: int) -> None:
    try:
        conn.sendall(lease_line(LEASE_FINISHED, code))
    except OSError:
        pass
    finally:
        conn.close()


def _keepalive(conn: socket.socket) -> None:
    """TCP keepalive with :data:`LEASE_KEEPALIVE_S` where the platform has the options."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in zip(
        ("TCP_KEEPIDLE", "TCP_KEEPINTVL", "TCP_KEEPCNT"), LEASE_KEEPALIVE_S, strict=True
    ):
        if hasattr(socket, option):
            conn.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def wait_for_chief(
    config: ClusterConfig, connect_timeout_s: float = LEASE_CONNECT_TIMEOUT_S, retry_s: float = LEASE_RETRY_S
) -> ChiefEnd:
    """A server's side of the run lease: connect to the chief's lease (retrying every ``retry_s``
    seconds for up to ``connect_timeout_s`` seconds while it is not there, or something else
    answers), then block until the chief's run is over. Returns how it ended."""
    host, port = lease_address(config)
    where = f"{host}:{port}"
    greeting = lease_line(LEASE_GREETING, cluster_digest(config))
    deadline = time.monotonic() + connect_timeout_s
    why = ""
    while True:
        if why:
            if time.monotonic() > deadline:
                return ChiefEnd(
                    False,
                    None,
                    f"no run lease of this cluster's chief at {where} after {connect_timeout_s:g} s ({why})",
                )
            time.sleep(retry_s)
        try:
            conn = socket.create_connection((host, port), timeout=LEASE_IO_TIMEOUT_S)
        except OSError as e:
            why = e.strerror or str(e)
            continue
        with conn, conn.makefile("rb") as reader:
            _keepalive(conn)
            try:
                if reader.readline(LEASE_LINE_MAX) != greeting:
                    why = "something else answers there"
                    continue
                conn.sendall(lease_line(LEASE_SERVER, config.task_type, config.task_index))
                conn.settimeout(None)
            except OSError as e:
                why = e.strerror or str(e)
                continue
            line = b""
            try:
                line = reader.readline(LEASE_LINE_MAX)
                kind, fields = parse_lease_line(line)
                if kind == LEASE_FINISHED and len(fields) == 1:
                    code = int(fields[0])
                    return ChiefEnd(True, code, f"the chief's run finished with exit code {code}")
                why = f"unexpected {line!r}"
            except OSError as e:
                why = e.strerror or str(e)
            except ValueError as e:
                why = "connection closed" if not line else str(e)
            return ChiefEnd(
                False,
                None,
                f"lost the chief's run lease at {where} without its "
                f"'{LEASE_FINISHED}' ({why}): the chief died or its host is gone",
            )
