"""The chief's run lease: how the chief of a real cluster drives its other tasks, and how either
side learns that the other is gone (docs/explanation/multi-worker.md, "The chief's run lease").

TensorFlow's cluster runtime has no notion of a run (the chief's TensorFlow process lives for one
cell; a dead peer shows only as a collective's timeout), so the chief's ``harness run`` process
listens on :func:`lease_address` (:class:`RunLease`) and every other task's connects to it
(:class:`ChiefLink`) for the whole run. Messages: ``harness-lease <digest>`` (the chief's
greeting, :func:`cluster_digest`), ``task <type> <index>``, ``welcome <job JSON>``; ``cell <name>
<cell JSON>`` (a cell starts); ``probe <bytes>`` + bytes, ``probed <bytes>`` (the link timed);
``finished <exit code>``. A connection that closes without ``finished``, or a second one in a
task's name, means the other side is lost (keepalive and ``TCP_USER_TIMEOUT`` bound it to
:data:`LOSS_BOUND_S`): the chief stops the cell and starts none; a task stops its cell and ends.
Plain TCP: no shared filesystem."""

from __future__ import annotations

import hashlib
import json
import queue
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from harness.launch.cluster import ClusterConfig, host_of

LEASE_GREETING = "harness-lease"
LEASE_TASK = "task"
LEASE_WELCOME = "welcome"
LEASE_CELL = "cell"
LEASE_PROBE = "probe"
LEASE_PROBED = "probed"
LEASE_FINISHED = "finished"
LEASE_LINE_MAX = 1 << 20
"""Longest lease line, in bytes (a cell's JSON is about 1 KiB)."""
LEASE_CONNECT_TIMEOUT_S = 600.0
"""Seconds a task keeps trying to reach the chief's lease before it gives up: the chief's start-up,
which on Kubernetes can include scheduling its pod and pulling its image."""
LEASE_JOIN_TIMEOUT_S = 300.0
"""Seconds the chief waits for every other task to connect before its first cell."""
LEASE_RETRY_S = 1.0
"""Seconds between a task's attempts to connect while the lease is not there yet."""
LEASE_LINGER_S = 30.0
"""Seconds the chief, once its run is over, waits for tasks that never connected."""
LEASE_IO_TIMEOUT_S = 10.0
"""Seconds either side waits to send or read a handshake line."""
LEASE_POLL_S = 0.2
"""Seconds between the chief's checks for new connections and for the end of its linger."""
LEASE_KEEPALIVE_S = (5, 2, 3)
"""TCP keepalive of every lease connection: idle seconds before the first probe, seconds between
probes, probes."""
LOSS_BOUND_S = 15
"""Seconds within which either side notices a vanished peer host (keepalive: 5 + 3 x 2 s; and
``TCP_USER_TIMEOUT`` for data left unacknowledged): the cell is then stopped (1 s grace) and its
row written well within 30 s of the loss."""
LAST_FIELD_TAKES_REST = {LEASE_WELCOME: 1, LEASE_CELL: 2}
"""Messages whose last field is JSON (spaces and all): how many fields they have."""
PROBE_BYTES = 64 << 20
"""Bytes the chief sends to time the link to another node (0.5 s at 1 Gbit/s)."""


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


def task_names(config: ClusterConfig) -> list[str]:
    """``"<type> <index>"`` of every task but the chief: those that hold a lease connection."""
    chief = config.chief_task
    return [
        f"{kind} {i}" for kind, addresses in config.spec for i in range(len(addresses)) if (kind, i) != chief
    ]


def task_host(config: ClusterConfig, name: str) -> str:
    """The host of task ``"<type> <index>"``."""
    kind, index = name.split()
    return host_of(config.jobs[kind][int(index)])


def lease_line(kind: str, *fields: object) -> bytes:
    """One lease message: ``kind`` and ``fields`` separated by spaces, ending in a newline."""
    return (" ".join([kind, *map(str, fields)]) + "\n").encode()


def parse_lease_line(line: bytes) -> tuple[str, list[str]]:
    """(kind, fields) of one lease message; ValueError for an empty, unterminated or odd line."""
    if not line.endswith(b"\n"):
        raise ValueError(f"incomplete lease line {line[:80]!r}")
    text = line.decode("utf-8", errors="replace").rstrip("\n")
    kind = text.split(" ", 1)[0].strip()
    if not kind:
        raise ValueError("empty lease line")
    fields = text.split(" ", LAST_FIELD_TAKES_REST.get(kind, -1))[1:]
    return kind, [f for f in fields if f.strip()]


def _tcp_options(conn: socket.socket) -> None:
    """Keepalive (:data:`LEASE_KEEPALIVE_S`) and a user timeout of :data:`LOSS_BOUND_S`, where the
    platform has the options."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    options = {
        "TCP_KEEPIDLE": LEASE_KEEPALIVE_S[0],
        "TCP_KEEPINTVL": LEASE_KEEPALIVE_S[1],
        "TCP_KEEPCNT": LEASE_KEEPALIVE_S[2],
        "TCP_USER_TIMEOUT": LOSS_BOUND_S * 1000,
    }
    for option, value in options.items():
        if hasattr(socket, option):
            conn.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


@dataclass(frozen=True)
class Lost:
    """A task the chief lost: its name (``worker 1``), its host, when (Unix s), and why."""

    task: str
    host: str
    at: float
    why: str

    def text(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        return f"{self.task} on {self.host} was lost at {when} ({self.why})"


class _Member:
    """One task's connection, as the chief holds it."""

    def __init__(self, name: str, conn: socket.socket, reader: Any) -> None:
        self.name, self.conn, self.reader = name, conn, reader
        self.probed = threading.Event()
        self.send_lock = threading.Lock()

    def send(self, *parts: bytes) -> None:
        """Send ``parts`` back to back (no other message between them)."""
        with self.send_lock:
            for data in parts:
                self.conn.sendall(data)

    def close(self) -> None:
        """Close the connection for good (the reader's reference too: a bare close keeps it open)."""
        _close(self.conn, self.reader)


def _close(conn: socket.socket, reader: Any) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    reader.close()
    conn.close()


class RunLease:
    """The chief's side (see the module docstring): listens on :func:`lease_address`'s port (every
    interface) for the whole run, greets each task with ``welcome`` (``welcome``: JSON-able job of
    the run), and watches each connection. :meth:`wait_for_tasks` before the first cell,
    :meth:`start_cell` per cell, :meth:`lost` at any time, :meth:`probe` to time a link,
    :meth:`finish` at the end. A context manager: leaving it without :meth:`finish` finishes with
    code 1. OSError when the port is busy. Its sockets are not inherited by child processes."""

    def __init__(
        self,
        config: ClusterConfig,
        welcome: Mapping[str, Any] | None = None,
        linger_s: float = LEASE_LINGER_S,
    ) -> None:
        self.config = config
        self.host, self.port = lease_address(config)
        self._greeting = lease_line(LEASE_GREETING, cluster_digest(config))
        self._welcome = lease_line(LEASE_WELCOME, json.dumps(dict(welcome or {}), separators=(",", ":")))
        self.expected = task_names(config)
        self._linger_s = linger_s
        if socket.has_dualstack_ipv6():
            self._listener = socket.create_server(
                ("", self.port), family=socket.AF_INET6, dualstack_ipv6=True
            )
        else:
            self._listener = socket.create_server(("", self.port))
        self._listener.settimeout(LEASE_POLL_S)
        self._lock = threading.Lock()
        self._members: dict[str, _Member] = {}
        self._seen: set[str] = set()
        self._lost: list[Lost] = []
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
            except OSError:  # closed by finish(), or a passing failure (EMFILE, ECONNABORTED)
                time.sleep(LEASE_POLL_S)
                continue
            conn.settimeout(LEASE_IO_TIMEOUT_S)
            reader = conn.makefile("rb")
            try:
                conn.sendall(self._greeting)
                kind, fields = parse_lease_line(reader.readline(LEASE_LINE_MAX))
                name = " ".join(fields)
                if kind != LEASE_TASK or name not in self.expected:
                    raise ValueError(f"not a task of this cluster: {kind} {name}")
                conn.sendall(self._welcome)
                conn.settimeout(None)
                _tcp_options(conn)
            except (OSError, ValueError):
                _close(conn, reader)
                continue
            member = _Member(name, conn, reader)
            with self._lock:
                self._seen.add(name)
                code, old = self._code, self._members.pop(name, None)
                if code is None:
                    self._members[name] = member
                if old is not None and code is None:
                    why = "it connected again while its first connection was open"
                    self._lost.append(Lost(name, task_host(self.config, name), time.time(), why))
            if old is not None:
                old.close()
            if code is not None:  # connected after the run ended: tell it at once
                _send_finished(member, code)
                continue
            threading.Thread(target=self._watch, args=(member,), name=f"lease-{name}", daemon=True).start()

    def _watch(self, member: _Member) -> None:
        """Reads the task's lines until its connection ends; an end before :meth:`finish` is a loss."""
        why = "its connection to the run lease closed"
        try:
            while True:
                line = member.reader.readline(LEASE_LINE_MAX)
                if not line:
                    break
                kind, _ = parse_lease_line(line)
                if kind == LEASE_PROBED:
                    member.probed.set()
        except (OSError, ValueError) as e:
            why = f"its connection to the run lease failed: {getattr(e, 'strerror', None) or e}"
        with self._lock:
            if self._code is not None or self._members.get(member.name) is not member:
                return
            del self._members[member.name]
            self._lost.append(Lost(member.name, task_host(self.config, member.name), time.time(), why))

    def lost(self) -> Lost | None:
        """The first task lost so far (None: every connected task is there)."""
        with self._lock:
            return self._lost[0] if self._lost else None

    def wait_for_tasks(self, timeout_s: float = LEASE_JOIN_TIMEOUT_S) -> list[str]:
        """Wait until every other task has connected; returns those that did not within
        ``timeout_s`` seconds (or were lost meanwhile)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                missing = [n for n in self.expected if n not in self._members]
            if not missing or time.monotonic() > deadline or self.lost():
                return missing
            time.sleep(LEASE_POLL_S)

    def _send_all(self, data: bytes) -> None:
        with self._lock:
            members = list(self._members.values())
        for member in members:
            try:
                member.send(data)
            except OSError:
                pass  # its watcher records the loss

    def start_cell(self, name: str, cell: Mapping[str, Any]) -> None:
        """Tell every task that the cell starts (``name``: the chief's process name for it)."""
        self._send_all(lease_line(LEASE_CELL, name, json.dumps(dict(cell), separators=(",", ":"))))

    def probe(self, task: str, nbytes: int = PROBE_BYTES, timeout_s: float = 60.0) -> float | None:
        """Gbit/s of ``nbytes`` sent to ``task`` and acknowledged (None: not connected, or no answer
        within ``timeout_s`` seconds)."""
        with self._lock:
            member = self._members.get(task)
        if member is None:
            return None
        member.probed.clear()
        chunk = bytes(1 << 20)
        payload = [chunk[: min(len(chunk), nbytes - sent)] for sent in range(0, nbytes, len(chunk))]
        t0 = time.perf_counter()
        try:
            member.send(lease_line(LEASE_PROBE, nbytes), *payload)
        except OSError:
            return None
        deadline = time.monotonic() + timeout_s
        while not member.probed.wait(LEASE_POLL_S):
            with self._lock:
                gone = self._members.get(task) is not member
            if gone or time.monotonic() > deadline:
                return None
        return nbytes * 8 / (time.perf_counter() - t0) / 1e9

    def finish(self, code: int) -> list[str]:
        """Tell every task the run is over with ``code`` (the chief's exit code) and close the
        lease; returns the tasks that never connected (after up to ``linger_s`` seconds)."""
        with self._lock:
            if self._code is not None:
                return []
            self._code = code
        deadline = time.monotonic() + self._linger_s
        try:
            while True:
                with self._lock:
                    missing = [n for n in self.expected if n not in self._seen]
                if not missing or time.monotonic() > deadline:
                    return missing
                time.sleep(LEASE_POLL_S)
        finally:  # (also when the linger is interrupted)
            with self._lock:
                members, self._members = list(self._members.values()), {}
            for member in members:
                _send_finished(member, code)
            self._closed.set()
            self._thread.join()
            self._listener.close()

    def __enter__(self) -> RunLease:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish(1)


def _send_finished(member: _Member, code: int) -> None:
    try:
        member.send(lease_line(LEASE_FINISHED, code))
    except OSError:
        pass
    finally:
        member.close()


@dataclass(frozen=True)
class ChiefEnd:
    """How the chief's run ended, as a task learnt it from the lease. ``finished``: the chief said
    so (``code``: its exit code); otherwise the lease was lost or never reached (``code`` None)."""

    finished: bool
    code: int | None
    detail: str


@dataclass(frozen=True)
class CellOrder:
    """The chief started a cell: the chief's process name for it, and the cell (JSON)."""

    name: str
    cell: dict[str, Any]


class ChiefLink:
    """A task's side (see the module docstring): :meth:`connect` (retrying while the lease is not
    there yet), then :meth:`next` for each order of the chief until a :class:`ChiefEnd`;
    :meth:`over` says why the run is over (None while it goes on). Probes are answered by the
    reading thread."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self.host, self.port = lease_address(config)
        self.welcome: dict[str, Any] = {}
        self._orders: queue.Queue[CellOrder | ChiefEnd] = queue.Queue()
        self._gone: str | None = None
        self._over: str | None = None
        self._conn: socket.socket | None = None

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(
        self, connect_timeout_s: float = LEASE_CONNECT_TIMEOUT_S, retry_s: float = LEASE_RETRY_S
    ) -> ChiefEnd | None:
        """Join the chief's lease; None once joined, else why not (a :class:`ChiefEnd`)."""
        greeting = lease_line(LEASE_GREETING, cluster_digest(self.config))
        deadline = time.monotonic() + connect_timeout_s
        why = ""
        while True:
            if why:
                if time.monotonic() > deadline:
                    return ChiefEnd(
                        False,
                        None,
                        f"no run lease of this cluster's chief at {self.where} after {connect_timeout_s:g} s ({why})",
                    )
                time.sleep(retry_s)
            try:
                conn = socket.create_connection((self.host, self.port), timeout=LEASE_IO_TIMEOUT_S)
            except OSError as e:
                why = e.strerror or str(e)
                continue
            reader = conn.makefile("rb")
            try:
                if reader.readline(LEASE_LINE_MAX) != greeting:
                    raise ValueError("something else answers there")
                conn.sendall(lease_line(LEASE_TASK, self.config.task_type, self.config.task_index))
                kind, fields = parse_lease_line(reader.readline(LEASE_LINE_MAX))
                if kind != LEASE_WELCOME:
                    raise ValueError(f"the chief answered {kind!r}, not {LEASE_WELCOME!r}")
                self.welcome = json.loads(" ".join(fields)) if fields else {}
                conn.settimeout(None)
                _tcp_options(conn)
            except (OSError, ValueError) as e:
                why = getattr(e, "strerror", None) or str(e)
                reader.close()
                conn.close()
                continue
            self._conn = conn
            threading.Thread(target=self._read, args=(conn, reader), name="chief-link", daemon=True).start()
            return None

    def _read(self, conn: socket.socket, reader: Any) -> None:
        why = "connection closed"
        try:
            while True:
                line = reader.readline(LEASE_LINE_MAX)
                if not line:
                    break
                kind, fields = parse_lease_line(line)
                if kind == LEASE_FINISHED and len(fields) == 1:
                    code = int(fields[0])
                    self._over = f"the chief's run finished with exit code {code}"
                    self._orders.put(ChiefEnd(True, code, self._over))
                    return
                if kind == LEASE_CELL and len(fields) == 2:
                    self._orders.put(CellOrder(fields[0], json.loads(fields[1])))
                elif kind == LEASE_PROBE and len(fields) == 1:
                    left = int(fields[0])
                    while left > 0:
                        got = reader.read(min(left, 1 << 20))
                        if not got:
                            raise ValueError("the probe ended early")
                        left -= len(got)
                    conn.sendall(lease_line(LEASE_PROBED, fields[0]))
        except OSError as e:
            why = e.strerror or str(e)
        except ValueError as e:
            why = str(e)
        finally:
            reader.close()
            conn.close()
        self._gone = (
            f"lost the chief's run lease at {self.where} without its '{LEASE_FINISHED}' ({why}): "
            "the chief died or its host is gone"
        )
        self._over = self._over or self._gone
        self._orders.put(ChiefEnd(False, None, self._gone))

    def over(self) -> str | None:
        """Why this task's cell must stop: the chief's run finished, or the chief is lost (None
        while the run goes on)."""
        return self._over

    def waiting(self) -> bool:
        """Whether an order (or the run's end) waits to be read."""
        return not self._orders.empty()

    def next(self, timeout_s: float | None = None) -> CellOrder | ChiefEnd | None:
        """The chief's next order, or how its run ended (None: nothing within ``timeout_s``)."""
        try:
            return self._orders.get(timeout=timeout_s)
        except queue.Empty:
            return None
