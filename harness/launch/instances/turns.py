"""One instance of a group, measured in turns (docs/explanation/measurement.md, "A ratio: processes
taking turns"): the coordinator grants turns over a Unix socket (:mod:`harness.contract.turns`) in
:func:`harness.spec.groups.turn_order`, splits each turn's CPU time (:mod:`harness.launch.system.cpu_use`)
and leaves a disturbed turn's block out (:func:`harness.formulas.turns.is_disturbed`). A member that
dies, or a passed deadline, drops the instance: every channel closes, every process is stopped, and
the instance says why (:attr:`Instance.dropped`)."""

from __future__ import annotations

import dataclasses
import json
import os
import select
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from harness.contract.events import Event
from harness.contract.job import WorkerOptions
from harness.contract.tenant import UNTIL_STOP, TenantFacts
from harness.contract.turns import MEMBER_ENV, TURNS_ENV, Do, Grant, Reply
from harness.formulas.turns import Turn
from harness.launch.cells.runner import CellEnd, Launcher, each_cell, run_cell_processes
from harness.launch.system.cpu_use import Snapshot, attribute
from harness.launch.system.platform import usable_cores
from harness.launch.system.process import POLL_S, instance_processes, kill_live
from harness.results.aggregate import shared_windows, with_shared
from harness.spec.frameworks import NONE, member_of, tenant_key, together_key
from harness.spec.groups import Group, Member, turn_order
from harness.spec.protocol import Protocol
from harness.spec.strategies import Role


class Dropped(Exception):
    """The instance cannot go on (a member failed, a deadline passed): the reason, and the key of
    the member whose processes failed or passed a deadline (None when no one member is to blame)."""

    def __init__(self, reason: str, culprit: str | None = None) -> None:
        super().__init__(reason)
        self.culprit = culprit


@dataclass(frozen=True)
class Plan:
    """How one instance runs: ``blocks`` of turns of about ``turn_s`` seconds each, the seed of
    the turn order, and the deadlines (s): for every process to be ready, for a member to be
    ready once the first one is (``behind_s``), and for one turn (a member's own work: the cell's
    deadline)."""

    blocks: int
    turn_s: float
    seed: int = 0
    ready_timeout_s: float = 600.0
    turn_timeout_s: float = 600.0
    behind_s: float = float("inf")

    @classmethod
    def of(cls, protocol: Protocol, startup_s: float) -> Plan:
        """The plan of ``protocol``'s instances, a worker's start-up given ``startup_s``."""
        cell_s = protocol.cell_timeout_s
        return cls(protocol.blocks, protocol.turn_s, protocol.seed, startup_s + cell_s, cell_s, cell_s)


@dataclass
class Instance:
    """What one instance of a group produced: each member's end (its record, or how it failed),
    the turns timed, the window steps each member calibrated, its wall seconds, and why it was
    dropped ("" when it completed)."""

    group: Group
    index: int
    ends: dict[str, CellEnd] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    steps: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    dropped: str = ""
    culprit: str | None = None
    """The member whose failure dropped the instance (the others were stopped because of it)."""
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds of each phase reached (``harness.results.cost.PHASES``), on the parent's clock."""
    processes: int = 0
    """Processes started for it (every task of every member, servers included)."""
    tenant_facts: dict[str, TenantFacts] = field(default_factory=dict)
    """By member key: what its co-tenant from another framework reported when it finished
    (:class:`harness.contract.tenant.TenantFacts`)."""
    _lap: float = field(default_factory=time.monotonic, repr=False)

    def lap(self, phase: str) -> None:
        """End ``phase`` now: its seconds since the previous phase ended (or the start)."""
        now = time.monotonic()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self._lap
        self._lap = now


def timing_processes(member: Member) -> int:
    """Processes of a member that time windows and so take turns: every computing task of each
    tenant (a parameter-server cell's servers are driven by its chief and take none)."""
    return member.cell.tenants * sum(1 for t in member.cell.tasks if t.role != Role.SERVER)


class Coordinator:
    """The parent's end of the turns channel: a listening Unix socket in ``folder``, every timing
    process's connection by member key, and the grants."""

    def __init__(self, folder: Path) -> None:
        self.path = str(folder / "turns.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(64)
        self.conns: dict[str, list[socket.socket]] = {}
        self._buffers: dict[socket.socket, bytes] = {}

    def close(self) -> None:
        """Close every channel accepted (waiting workers fail at once) and the socket."""
        for c in self._buffers:
            c.close()
        self.server.close()
        Path(self.path).unlink(missing_ok=True)

    def _line(
        self, conn: socket.socket, deadline: float, what: str, key: str | None = None
    ) -> dict[str, object]:
        """The next JSON line from ``conn``, a process of member ``key`` (Dropped on EOF or after
        ``deadline``, naming the member)."""
        while b"\n" not in self._buffers.get(conn, b""):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([conn], [], [], left)[0]:
                raise Dropped(f"no answer from a process within the deadline ({what})", key)
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:  # it died with our grant unread
                chunk = b""
            if not chunk:
                raise Dropped(f"a process closed its channel ({what}): it failed or exited", key)
            self._buffers[conn] = self._buffers.get(conn, b"") + chunk
        line, _, rest = self._buffers[conn].partition(b"\n")
        self._buffers[conn] = rest
        message: dict[str, object] = json.loads(line)
        return message

    def gather(
        self,
        expected: dict[str, int],
        timeout_s: float,
        ended: Callable[[], str | None],
        behind_s: float = float("inf"),
    ) -> None:
        """Wait until every member's timing processes have said hello (their first call is over).
        Dropped, naming the member, when a member's processes ended first (``ended``: the key of
        such a member, or None), or when a member is still not ready ``behind_s`` seconds after
        the first one was; Dropped after ``timeout_s`` in all."""
        deadline = time.monotonic() + timeout_s
        waiting: list[socket.socket] = []
        first: float | None = None
        while sum(len(c) for c in self.conns.values()) < sum(expected.values()):
            gone = ended()
            if gone is not None:
                raise Dropped("a member's processes ended before every member was ready", gone)
            now = time.monotonic()
            if first is not None and now - first > behind_s:
                late = next(k for k, n in expected.items() if len(self.conns.get(k, [])) < n)
                raise Dropped(
                    f"deadline passed: {late} not ready {behind_s:g} s after the first member", late
                )
            if now > deadline:
                raise Dropped(f"not every member was ready within {timeout_s:g} s")
            readable = select.select([self.server, *waiting], [], [], POLL_S)[0]
            for s in readable:
                if s is self.server:
                    conn, _ = self.server.accept()
                    waiting.append(conn)
                    self._buffers[conn] = b""
                    continue
                waiting.remove(s)
                try:
                    hello = self._line(s, deadline, "hello")
                except Dropped:  # it died before its hello: its member's launcher will end
                    continue
                self.conns.setdefault(str(hello["hello"]), []).append(s)
                first = time.monotonic() if first is None else first

    def send(self, key: str, grant: Grant) -> None:
        """Send ``grant`` to every process of member ``key`` (Dropped when one is gone)."""
        data = (json.dumps(grant) + "\n").encode()
        for c in self.conns[key]:
            try:
                c.sendall(data)
            except OSError as e:
                raise Dropped(f"{key} is gone ({e})", member_of(key)) from None

    def ask(self, key: str, grant: Grant, timeout_s: float) -> list[Reply]:
        """Send ``grant`` to every process of ``key`` (a member's, or its co-tenant's from another
        framework) and wait for each one's reply."""
        deadline = time.monotonic() + timeout_s
        self.send(key, grant)
        replies: list[Reply] = []
        for c in self.conns[key]:
            reply = self._line(c, deadline, f"{grant['do']} of {key}", member_of(key))
            replies.append(Reply(**reply))  # type: ignore[typeddict-item]
        return replies


def _member_options(options: WorkerOptions, member: Member, path: str, members: int) -> WorkerOptions:
    """A member's worker options: the channel's variables, and the cell's deadline stretched to
    the whole instance (a member waits while the others take their turns; the coordinator holds
    each member to the cell's deadline for its own work: :class:`Plan`)."""
    env = (*options.env, (TURNS_ENV, path), (MEMBER_ENV, member.key))
    return dataclasses.replace(options, env=env, cell_timeout_s=options.cell_timeout_s * (members + 1))


def stop_instance(path: str) -> int:
    """SIGKILL every process of the instance whose channel is ``path`` (:func:`instance_processes`);
    returns how many. A dropped instance's members are stopped at once rather than at their
    launchers' deadlines (a hung one ignores SIGTERM); their launchers then see them exit."""
    return len(kill_live([pid for found in instance_processes(path).values() for pid in found]))


def run_instance(
    group: Group,
    index: int,
    plan: Plan,
    options: Callable[[Member], WorkerOptions],
    launcher: Launcher = run_cell_processes,
    prefix: str = "",
    steps: Mapping[str, int] | None = None,
) -> Instance:
    """Run instance ``index`` of ``group``: start every member's processes (``options(member)``:
    the worker options of its side), grant the calibration turns (``steps``: by turn key, the
    window steps an earlier instance calibrated, which the member then reuses), ``plan.blocks``
    blocks of window turns and the finishing turns; collect every member's end. Leaves no
    process behind."""
    instance = Instance(group, index)
    t0 = instance._lap
    with tempfile.TemporaryDirectory(prefix="harness-turns-") as folder:
        coordinator = Coordinator(Path(folder))
        threads: dict[str, threading.Thread] = {}

        def member_thread(i: int, member: Member) -> None:
            opts = _member_options(options(member), member, coordinator.path, len(group.members))
            for end in each_cell([member.cell], opts, launcher, prefix=f"{prefix}m{i}-"):
                instance.ends[member.key] = end

        for i, member in enumerate(group.members):
            t = threading.Thread(target=member_thread, args=(i, member), daemon=True)
            t.start()
            threads[member.key] = t

        def ended() -> str | None:
            return next((key for key, t in threads.items() if not t.is_alive()), None)

        try:
            _coordinate(coordinator, group, plan, instance, ended, steps or {})
        except Dropped as e:
            instance.dropped, instance.culprit = str(e), e.culprit
            instance.processes = max(instance.processes, stop_instance(coordinator.path))
        finally:
            coordinator.close()
            for t in threads.values():
                while t.is_alive():
                    t.join(POLL_S)
    instance.lap("exit")
    instance.wall_s = time.monotonic() - t0
    if not instance.dropped:
        failed = [m.key for m in group.members if instance.ends.get(m.key) is None]
        if failed:
            instance.dropped, instance.culprit = f"no record from {', '.join(failed)}", failed[0]
    for m in group.members:
        if m.cell.tenant_framework != NONE and m.key in instance.ends:
            instance.ends[m.key] = with_tenant(instance, m)
    return instance


def with_tenant(instance: Instance, member: Member) -> CellEnd:
    """A member with a co-tenant from another framework: its end with the figures of both sides,
    from this instance's turns (:func:`harness.results.aggregate.with_shared`)."""
    end = instance.ends[member.key]
    if end.event != Event.RECORD or end.row is None:
        return end
    tenant = _channel_keys(member)[1]
    facts = instance.tenant_facts.get(member.key, {})
    row = with_shared(end.row, instance.turns, member.key, tenant, facts)
    cell = member.cell
    windows = shared_windows(
        end.windows, instance.turns, member.key, tenant, cell.tenant_framework, cell.effective_batch
    )
    return dataclasses.replace(end, row=row, windows=windows)


def _coordinate(
    coordinator: Coordinator,
    group: Group,
    plan: Plan,
    instance: Instance,
    ended: Callable[[], str | None],
    known: Mapping[str, int] | None = None,
) -> None:
    """The grants of one instance (see the module docstring); Dropped when it cannot go on.
    ``ended``: the key of a member whose processes have all ended (None while all run)."""
    members = group.members
    units = [u for m in members for u in turn_units(m)]
    expected = {m.key: timing_processes(m) for m in members}  # processes to say hello, by key
    expected.update({k: 1 for m in members for k in _channel_keys(m)[1:]})
    coordinator.gather(expected, plan.ready_timeout_s, ended, plan.behind_s)
    instance.lap("start")
    for key in (k for m in members for k in _channel_keys(m)):
        grant: Grant = {"do": Do.CALIBRATE, "window_s": plan.turn_s}
        if (known or {}).get(key):
            grant["steps"] = (known or {})[key]
        replies = coordinator.ask(key, grant, plan.turn_timeout_s)
        instance.steps[key] = int(replies[0].get("steps") or 0)
    instance.lap("calibration")
    pids = instance_processes(coordinator.path)  # every task of each member, servers included
    instance.processes = sum(len(p) for p in pids.values())
    for block in range(plan.blocks):
        for i in turn_order(len(units), block, plan.seed + instance.index):
            unit = units[i]
            own_pids = pids.get(unit.member.key, [])
            before = Snapshot.take(time.monotonic, first=True)
            timed = unit.take(coordinator, block, plan.turn_timeout_s, instance.steps)
            after = Snapshot.take(time.monotonic, first=False)
            for key, seconds, examples, cpu_s in timed:
                use = attribute(before, after, own_pids, os.getpid(), max(usable_cores(), 1), cpu_s)
                instance.turns.append(
                    Turn(
                        block,
                        key,
                        seconds,
                        examples,
                        use.other_s,
                        use.run_s,
                        use.idle_cpus,
                        use.busiest,
                        use.busiest_s,
                        use.foreign_s,
                        use.span_s,
                    )
                )
    instance.lap("turns")
    for m in members:
        for key in _channel_keys(m):
            replies = coordinator.ask(key, {"do": Do.FINISH}, plan.turn_timeout_s)
            facts = replies[0].get("facts")
            if key != m.key and isinstance(facts, dict):
                instance.tenant_facts[m.key] = cast(TenantFacts, facts)  # the co-tenant's reply
    instance.lap("finish")


def _channel_keys(member: Member) -> tuple[str, ...]:
    """The keys a member's processes say hello under: the member's, and its co-tenant's from another
    framework (:func:`harness.spec.frameworks.tenant_key`)."""
    framework = member.cell.tenant_framework
    return (member.key,) if framework == NONE else (member.key, tenant_key(member.key, framework))


Timed = tuple[str, float, int, float]
"""One side's part of a turn: (turn key, wall seconds, examples, CPU seconds it reported)."""


@dataclass(frozen=True)
class TurnUnit:
    """One kind of turn of a member: ``alone`` (its TensorFlow processes; a plain member's only
    kind), ``tenant`` (its co-tenant from another framework alone) or ``together`` (both at once,
    the co-tenant training until TensorFlow's window is over)."""

    member: Member
    kind: str = "alone"

    def take(
        self, coordinator: Coordinator, block: int, timeout_s: float, steps: Mapping[str, int]
    ) -> list[Timed]:
        """Grant this turn and wait for it: each side's timed part."""
        m, grant = self.member, Grant(do=Do.WINDOW, block=block)
        batch = m.cell.effective_batch
        tenant = _channel_keys(m)[-1]

        def theirs(key: str, reply: Reply) -> Timed:  # the co-tenant reports no CPU seconds
            return (key, float(reply.get("seconds") or 0.0), int(reply.get("steps") or 0) * batch, 0.0)

        if self.kind == "tenant":
            return [theirs(tenant, coordinator.ask(tenant, grant, timeout_s)[0])]
        if self.kind == "together":
            coordinator.send(tenant, Grant(do=Do.WINDOW, block=block, until=UNTIL_STOP))
        replies = coordinator.ask(m.key, grant, timeout_s)
        seconds = max(float(r.get("seconds") or 0.0) for r in replies)
        cpu_s = sum(float(r.get("cpu_s") or 0.0) for r in replies)
        ours = (m.key, seconds, steps[m.key] * batch * m.cell.tenants, cpu_s)
        if self.kind != "together":
            return [ours]
        reply = coordinator.ask(tenant, Grant(do=Do.STOP), timeout_s)[0]
        return [(together_key(m.key), *ours[1:]), theirs(together_key(tenant), reply)]


def turn_units(member: Member) -> list[TurnUnit]:
    """The kinds of turn a member takes in each block (each twice, in a balanced order)."""
    if member.cell.tenant_framework == NONE:
        return [TurnUnit(member)]
    return [TurnUnit(member), TurnUnit(member, "tenant"), TurnUnit(member, "together")]
