"""The chief's run lease: how the chief of a real cluster drives its other tasks, and how either
side learns that the other is gone, or why (docs/explanation/multi-worker.md, "The chief's run lease").

The chief listens on :func:`lease_address` (:class:`RunLease`); every other task keeps a connection
to it for the whole run (:class:`ChiefLink`). The wire: one JSON object per line, its ``kind`` one of
:data:`MESSAGES`, opened by :func:`_handshake` (``join``, then ``welcome``); a connection that closes
without ``finished`` (or ``exit``) means the other side is lost (:data:`LOSS_BOUND_S`). A ``probe``
line is followed by ``nbytes`` raw bytes, read unparsed so that the probe times the link, not JSON
parsing (0.1 s for 64 MiB)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from harness.launch.cells.cluster import ClusterConfig, host_of
from harness.launch.nodes.scheduler import Seen, join_overdue

LEASE_LINE_MAX = 1 << 20
"""Longest lease line, in bytes (a cell's JSON is about 1 KiB)."""
LEASE_CONNECT_TIMEOUT_S = 600.0
"""Seconds a task keeps trying to reach the chief's lease (the chief's start-up may include
scheduling its pod and pulling its image)."""
LEASE_JOIN_TIMEOUT_S = 300.0
"""Seconds the chief waits for a task to join when its scheduler says nothing about it."""
LEASE_RETRY_S = 1.0
"""Seconds between a task's attempts to connect while the lease is not there yet."""
LEASE_LINGER_S = 30.0
"""Seconds the chief, once its run is over, waits for tasks that never connected."""
LEASE_IO_TIMEOUT_S = 10.0
"""Seconds either side waits to send or read a handshake line."""
LEASE_POLL_S = 0.2
"""Seconds between the chief's checks for new connections and for the end of its linger."""
LEASE_KEEPALIVE_S = (5, 2, 3)
"""TCP keepalive: idle seconds before the first probe, seconds between probes, probes."""
LOSS_BOUND_S = 15
"""Seconds within which either side notices a vanished peer host (keepalive 5 + 3 x 2 s, and
``TCP_USER_TIMEOUT`` for unacknowledged data): the cell's row is written within 30 s of the loss."""
PROBE_BYTES = 64 << 20
"""Bytes the chief sends to time the link to another node (0.5 s at 1 Gbit/s)."""


@dataclass(frozen=True)
class Join:
    """A task joins: its name (``worker 1``) and its cluster's digest."""

    task: str
    cluster: str


@dataclass(frozen=True)
class Welcome:
    """The chief admits a task: the run's job (options and first cell), as JSON."""

    job: dict[str, Any]


@dataclass(frozen=True)
class CellOrder:
    """The chief started a cell: the chief's process name for it, and the cell (JSON)."""

    name: str
    cell: dict[str, Any]


@dataclass(frozen=True)
class LinkProbe:
    """``nbytes`` raw bytes follow: answer with :class:`Probed`."""

    nbytes: int


@dataclass(frozen=True)
class Probed:
    """The probe's bytes arrived."""

    nbytes: int


@dataclass(frozen=True)
class Finished:
    """The chief's run is over, with its exit code."""

    code: int


@dataclass(frozen=True)
class CellFailed:
    """A task's part of cell ``name`` (the chief's process name) failed, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class Exit:
    """A task ends on its own (not told by the chief), and why."""

    reason: str


Message = Join | Welcome | CellOrder | LinkProbe | Probed | Finished | CellFailed | Exit
MESSAGES: dict[str, type[Message]] = {
    "join": Join,
    "welcome": Welcome,
    "cell": CellOrder,
    "probe": LinkProbe,
    "probed": Probed,
    "finished": Finished,
    "failed": CellFailed,
    "exit": Exit,
}
"""Each message's ``kind`` on the wire."""
_KINDS = {cls: kind for kind, cls in MESSAGES.items()}
M = TypeVar("M", bound=Message)


def encode(message: Message) -> bytes:
    """One lease line: the message's fields and its ``kind`` as one JSON object."""
    fields = {"kind": _KINDS[type(message)], **dataclasses.asdict(message)}
    return (json.dumps(fields, separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> Message:
    """The message of one lease line; ValueError naming what is wrong with it."""
    if not line.endswith(b"\n"):
        raise ValueError(f"incomplete lease line {line[:80]!r}")
    try:
        fields = json.loads(line)
        cls = MESSAGES[fields.pop("kind")]
        message = cls(**fields)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(
            f"not a lease message ({e!r}): {line[:80]!r}; expected one of {', '.join(MESSAGES)}"
        ) from None
    hints = {f.name: f.type for f in dataclasses.fields(cls)}
    for name, value in fields.items():
        wanted = {"int": int, "str": str}.get(str(hints[name]), dict)
        if not isinstance(value, wanted) or isinstance(value, bool):
            raise ValueError(f"lease message {line[:80]!r}: {name} is {value!r}; expected {wanted.__name__}")
    return message


def lease_address(config: ClusterConfig) -> tuple[str, int]:
    """(host, port) of the chief's run lease: the chief's host, and one above the highest port any
    task uses on that host (with SlurmClusterResolver: 8888 + the tasks on the chief's node)."""
    host = task_host(config, "{} {}".format(*config.chief_task))
    addresses = [a for addresses in config.jobs.values() for a in addresses if host_of(a) == host]
    return host, max(int(a.rsplit(":", 1)[1]) for a in addresses) + 1


def cluster_digest(config: ClusterConfig) -> str:
    """16 hex digits naming the cluster (every task's address): the same in every task."""
    return hashlib.sha256(json.dumps(config.spec).encode()).hexdigest()[:16]


def task_names(config: ClusterConfig) -> list[str]:
    """``"<type> <index>"`` of every task but the chief: those that hold a lease connection."""
    return [f"{kind} {i}" for kind, a in config.spec for i in range(len(a)) if (kind, i) != config.chief_task]


def task_host(config: ClusterConfig, name: str) -> str:
    """The host of task ``"<type> <index>"``."""
    kind, index = name.split()
    return host_of(config.jobs[kind][int(index)])


def _tcp_options(conn: socket.socket) -> None:
    """Keepalive (:data:`LEASE_KEEPALIVE_S`) and a user timeout of :data:`LOSS_BOUND_S`, where the
    platform has the options."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    names = ("TCP_KEEPIDLE", "TCP_KEEPINTVL", "TCP_KEEPCNT", "TCP_USER_TIMEOUT")
    for option, value in zip(names, (*LEASE_KEEPALIVE_S, LOSS_BOUND_S * 1000), strict=True):
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


class _Conn:
    """One lease connection (task ``name``'s, on the chief's side): whole sends, reads of one
    message, and its close."""

    def __init__(self, conn: socket.socket, name: str = "") -> None:
        self.conn, self.reader, self.name = conn, conn.makefile("rb"), name
        self.probed = threading.Event()
        self._lock = threading.Lock()

    def send(self, *parts: bytes) -> None:
        with self._lock:
            for data in parts:
                self.conn.sendall(data)

    def read(self) -> Message | None:
        """The next message (None: the connection closed); ValueError for a line that is none."""
        line = self.reader.readline(LEASE_LINE_MAX)
        return decode(line) if line else None

    def close(self) -> None:
        """Close the connection for good (the reader's reference too: a bare close keeps it open)."""
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.reader.close()
        self.conn.close()


def _handshake(
    sock: socket.socket, own: Message, want: type[M], fits: Callable[[M], bool] = lambda _: True
) -> tuple[_Conn, M]:
    """The handshake on either side of a new connection (``own``: this side's line, ``join`` first):
    the other side's line must be a ``want`` that ``fits``; else OSError or ValueError, closed."""
    chief = isinstance(own, Welcome)
    sock.settimeout(LEASE_IO_TIMEOUT_S)
    conn = _Conn(sock)
    try:
        if not chief:
            conn.send(encode(own))
        other = conn.read()
        if not isinstance(other, want) or not fits(other):
            refused = f"not a task of this cluster: {other}"
            raise ValueError(refused if chief else "something else answers there, or another cluster's chief")
        if chief:
            conn.send(encode(own))
        sock.settimeout(None)
        _tcp_options(sock)
    except (OSError, ValueError):
        conn.close()
        raise
    return conn, other


def _listen(port: int, retry_s: float = 2.0) -> socket.socket:
    """A listener on ``port``, every address; a bind refused while a local socket holds the port for
    a moment is tried again for ``retry_s`` seconds."""
    dual = socket.has_dualstack_ipv6()
    deadline = time.monotonic() + retry_s
    while True:
        try:
            return socket.create_server(
                ("", port), family=socket.AF_INET6 if dual else socket.AF_INET, dualstack_ipv6=dual
            )
        except OSError as e:
            if e.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class RunLease(contextlib.AbstractContextManager["RunLease"]):
    """The chief's side: listens on :func:`lease_address`'s port, welcomes each task with ``welcome``
    (the run's job) and watches it: :meth:`wait_for_tasks`, :meth:`start_cell`, :meth:`lost`,
    :meth:`failed`, :meth:`probe`, :meth:`finish` (1 when left as a context manager); OSError: port busy."""

    def __init__(
        self,
        config: ClusterConfig,
        welcome: Mapping[str, Any] | None = None,
        linger_s: float = LEASE_LINGER_S,
    ) -> None:
        self.config = config
        self.host, self.port = lease_address(config)
        self._digest = cluster_digest(config)
        self._welcome = Welcome(dict(welcome or {}))
        self.expected = task_names(config)
        self._linger_s = linger_s
        self._listener = _listen(self.port)
        self._listener.settimeout(LEASE_POLL_S)
        self._lock = threading.RLock()
        self._members: dict[str, _Conn] = {}
        self._seen: set[str] = set()
        self._lost: list[Lost] = []
        self._failed: dict[str, str] = {}
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
            try:
                member, join = _handshake(
                    conn, self._welcome, Join, lambda j: j.cluster == self._digest and j.task in self.expected
                )
            except (OSError, ValueError):
                continue
            member.name = name = join.task
            with self._lock:
                self._seen.add(name)
                code, old = self._code, self._members.pop(name, None)
                if code is None:
                    self._members[name] = member
                if old is not None and code is None:
                    self._lose(name, "it connected again while its first connection was open")
            if old is not None:
                old.close()
            if code is not None:  # connected after the run ended: tell it at once
                _send_finished(member, code)
                continue
            threading.Thread(target=self._watch, args=(member,), name=f"lease-{name}", daemon=True).start()

    def _lose(self, name: str, why: str) -> None:
        """Record task ``name`` lost."""
        with self._lock:
            self._lost.append(Lost(name, task_host(self.config, name), time.time(), why))

    def _watch(self, member: _Conn) -> None:
        """Reads the task's messages until its connection ends; an end before :meth:`finish` is a
        loss, named by the task's ``exit`` where it sent one."""
        why = "its connection to the run lease closed"
        try:
            while (message := member.read()) is not None:
                if isinstance(message, Probed):
                    member.probed.set()
                elif isinstance(message, CellFailed):
                    where = f"{member.name} on {task_host(self.config, member.name)}"
                    with self._lock:
                        self._failed.setdefault(message.name, f"{where}: its part failed: {message.reason}")
                elif isinstance(message, Exit):
                    why = f"it exited: {message.reason}"
                    break
        except (OSError, ValueError) as e:
            why = f"its connection to the run lease failed: {getattr(e, 'strerror', None) or e}"
        with self._lock:
            if self._code is not None or self._members.get(member.name) is not member:
                return
            del self._members[member.name]
            self._lose(member.name, why)

    def lost(self) -> Lost | None:
        """The first task lost so far (None: every connected task is there)."""
        with self._lock:
            return self._lost[0] if self._lost else None

    def failed(self, name: str) -> str | None:
        """Why another task's part of cell ``name`` (the chief's process name) failed, naming the
        task and its node (None: none said so)."""
        with self._lock:
            return self._failed.get(name)

    def wait_for_tasks(
        self, seen: Callable[[str], Seen | None] = lambda host: None, timeout_s: float = LEASE_JOIN_TIMEOUT_S
    ) -> Lost | None:
        """Wait until every other task has joined; the first one lost meanwhile or never joined
        (:func:`harness.launch.nodes.scheduler.join_overdue`; ``seen``: what the scheduler reports
        about a host), else None. Interrupted, every task still missing is lost."""
        started = time.monotonic()
        try:
            while self.lost() is None:
                with self._lock:
                    missing = [n for n in self.expected if n not in self._members]
                if not missing:
                    break
                for name in missing:
                    why = join_overdue(
                        time.monotonic(), started, seen(task_host(self.config, name)), timeout_s
                    )
                    if why is not None:
                        self._lose(name, why)
                time.sleep(LEASE_POLL_S)
        except KeyboardInterrupt:
            waited = time.monotonic() - started
            why = f"it had not joined the chief's run lease when the chief was stopped, {waited:.0f} s in"
            with self._lock:
                for name in [n for n in self.expected if n not in self._members]:
                    self._lose(name, why)
        return self.lost()

    def start_cell(self, name: str, cell: Mapping[str, Any]) -> None:
        """Tell every task that the cell starts (``name``: the chief's process name for it)."""
        with self._lock:
            members = list(self._members.values())
        for member in members:
            try:
                member.send(encode(CellOrder(name, dict(cell))))
            except OSError:
                pass  # its watcher records the loss

    def probe(self, task: str, nbytes: int = PROBE_BYTES, timeout_s: float = 60.0) -> float | None:
        """Gbit/s of ``nbytes`` sent to ``task`` and acknowledged (None: not connected, or no answer
        within ``timeout_s`` seconds)."""
        with self._lock:
            member = self._members.get(task)
        if member is None:
            return None
        member.probed.clear()
        payload = [bytes(1 << 20)] * (nbytes >> 20) + [bytes(nbytes % (1 << 20))]  # one buffer, sent again
        t0 = time.perf_counter()
        try:
            member.send(encode(LinkProbe(nbytes)), *payload)
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
        """Tell every task the run is over with ``code`` (the chief's exit code) and close the lease;
        returns the tasks that never connected (within ``linger_s`` seconds), lost ones aside."""
        with self._lock:
            if self._code is not None:
                return []
            self._code = code
        deadline = time.monotonic() + self._linger_s
        try:
            while True:
                with self._lock:
                    lost = {g.task for g in self._lost}
                    missing = [n for n in self.expected if n not in self._seen and n not in lost]
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

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish(1)


def _send_finished(member: _Conn, code: int) -> None:
    try:
        member.send(encode(Finished(code)))
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


class ChiefLink:
    """A task's side: :meth:`connect`, then :meth:`next` for each order of the chief until a
    :class:`ChiefEnd`; :meth:`over` says why the run is over; :meth:`tell` sends the chief a cell's
    failure or this task's exit. Probes are answered by the reading thread."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self.host, self.port = lease_address(config)
        self.where = f"{self.host}:{self.port}"
        self.welcome: dict[str, Any] = {}
        self._orders: queue.Queue[CellOrder | ChiefEnd] = queue.Queue()
        self._gone: str | None = None
        self._over: str | None = None
        self._conn: _Conn | None = None

    def connect(
        self,
        connect_timeout_s: float = LEASE_CONNECT_TIMEOUT_S,
        retry_s: float = LEASE_RETRY_S,
        over: Callable[[], str | None] = lambda: None,
    ) -> ChiefEnd | None:
        """Join the chief's lease; None once joined, else why not (a :class:`ChiefEnd`): no lease
        after ``connect_timeout_s`` seconds, or ``over`` gave a reason to stop trying."""
        join = Join(f"{self.config.task_type} {self.config.task_index}", cluster_digest(self.config))
        deadline = time.monotonic() + connect_timeout_s
        why = ""
        while True:
            if why:
                ended = over()
                if ended is not None or time.monotonic() > deadline:
                    within = f"after {connect_timeout_s:g} s" if ended is None else f"and {ended}"
                    return ChiefEnd(
                        False, None, f"no run lease of this cluster's chief at {self.where} {within} ({why})"
                    )
                time.sleep(retry_s)
            try:
                sock = socket.create_connection((self.host, self.port), timeout=LEASE_IO_TIMEOUT_S)
                if sock.getsockname() == sock.getpeername():  # no listener: TCP joined itself
                    sock.close()
                    raise OSError("no listener")
                conn, welcome = _handshake(sock, join, Welcome)
            except (OSError, ValueError) as e:
                why = getattr(e, "strerror", None) or str(e)
                continue
            self.welcome = welcome.job
            self._conn = conn
            threading.Thread(target=self._read, args=(conn,), name="chief-link", daemon=True).start()
            return None

    def _read(self, conn: _Conn) -> None:
        why = "connection closed"
        try:
            while (message := conn.read()) is not None:
                if isinstance(message, Finished):
                    self._over = f"the chief's run finished with exit code {message.code}"
                    self._orders.put(ChiefEnd(True, message.code, self._over))
                    return
                if isinstance(message, CellOrder):
                    self._orders.put(message)
                elif isinstance(message, LinkProbe):
                    left = message.nbytes
                    while left > 0:
                        got = conn.reader.read(min(left, 1 << 20))
                        if not got:
                            raise ValueError("the probe ended early")
                        left -= len(got)
                    conn.send(encode(Probed(message.nbytes)))
        except (OSError, ValueError) as e:
            why = getattr(e, "strerror", None) or str(e)
        finally:
            conn.close()
        self._gone = (
            f"lost the chief's run lease at {self.where} without its 'finished' ({why}): "
            "the chief died or its host is gone"
        )
        self._over = self._over or self._gone
        self._orders.put(ChiefEnd(False, None, self._gone))

    def tell(self, message: CellFailed | Exit) -> None:
        """Send the chief a cell's failure, or this task's exit (then the connection closes); a lost
        lease is no error here."""
        if self._conn is None:
            return
        try:
            self._conn.send(encode(message))
        except OSError:
            pass
        if isinstance(message, Exit):
            self._conn.close()

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
