"""One instance of a group, measured in turns: every member's processes start together, build and
compile (untimed), then the coordinator grants turns over a Unix socket
(:mod:`harness.contract.turns`): one member at a time (every timing process of it: all workers of
a multi-worker cell, all tenants of a co-tenant cell) runs one timed window with the whole
machine while every other process waits in a blocking read that uses no CPU. Each block gives
every member two turns in a balanced order (:func:`harness.spec.groups.turn_order`: ABBA for two).
Then each member, in turn, runs its checks (and the step breakdown) alone, reports its record and
exits.

A member that dies, or a deadline that passes, drops the instance: the coordinator closes every
channel (each waiting worker then fails at once), every process is stopped by its launcher, and
the instance says why (:attr:`Instance.dropped`).
"""

from __future__ import annotations

import dataclasses
import json
import select
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.contract.job import WorkerOptions
from harness.contract.turns import MEMBER_ENV, TURNS_ENV, Do, Grant, Reply
from harness.formulas.turns import Turn
from harness.launch.process import POLL_S
from harness.launch.runner import CellEnd, Launcher, each_cell, run_cell_processes
from harness.spec.groups import Group, Member, turn_order
from harness.spec.strategies import Role


class Dropped(Exception):
    """The instance cannot go on (a member failed, a deadline passed): the reason."""


@dataclass(frozen=True)
class Plan:
    """How one instance runs: ``blocks`` of turns of about ``turn_s`` seconds each, the seed of
    the turn order, the deadlines (s) for every process to be ready and for one turn."""

    blocks: int
    turn_s: float
    seed: int = 0
    ready_timeout_s: float = 600.0
    turn_timeout_s: float = 600.0


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
        """Close every channel (waiting workers fail at once) and the socket."""
        for conns in self.conns.values():
            for c in conns:
                c.close()
        for c in self._buffers:
            c.close()
        self.server.close()
        Path(self.path).unlink(missing_ok=True)

    def _line(self, conn: socket.socket, deadline: float, what: str) -> dict[str, object]:
        """The next JSON line from ``conn`` (Dropped on EOF or after ``deadline``)."""
        while b"\n" not in self._buffers.get(conn, b""):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([conn], [], [], left)[0]:
                raise Dropped(f"no answer from a process within the deadline ({what})")
            chunk = conn.recv(65536)
            if not chunk:
                raise Dropped(f"a process closed its channel ({what}): it failed or exited")
            self._buffers[conn] = self._buffers.get(conn, b"") + chunk
        line, _, rest = self._buffers[conn].partition(b"\n")
        self._buffers[conn] = rest
        message: dict[str, object] = json.loads(line)
        return message

    def gather(self, expected: dict[str, int], timeout_s: float, alive: Callable[[], bool]) -> None:
        """Wait until every member's timing processes have said hello (their first call is over).
        Dropped when a member's processes ended first or after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        waiting: list[socket.socket] = []
        have = 0
        while have < sum(expected.values()):
            if not alive():
                raise Dropped("a member's processes ended before every member was ready")
            if time.monotonic() > deadline:
                raise Dropped(f"not every member was ready within {timeout_s:g} s")
            readable = select.select([self.server, *waiting], [], [], POLL_S)[0]
            for s in readable:
                if s is self.server:
                    conn, _ = self.server.accept()
                    waiting.append(conn)
                    self._buffers[conn] = b""
                    continue
                hello = self._line(s, deadline, "hello")
                waiting.remove(s)
                self.conns.setdefault(str(hello["hello"]), []).append(s)
                have += 1

    def ask(self, key: str, grant: Grant, timeout_s: float) -> list[Reply]:
        """Send ``grant`` to every process of member ``key`` and wait for each one's reply."""
        data = (json.dumps(grant) + "\n").encode()
        deadline = time.monotonic() + timeout_s
        for c in self.conns[key]:
            try:
                c.sendall(data)
            except OSError as e:
                raise Dropped(f"member {key} is gone ({e})") from None
        replies: list[Reply] = []
        for c in self.conns[key]:
            reply = self._line(c, deadline, f"{grant['do']} of {key}")
            replies.append(Reply(**reply))  # type: ignore[typeddict-item]
        return replies


def _member_options(options: WorkerOptions, member: Member, path: str) -> WorkerOptions:
    return dataclasses.replace(options, env=(*options.env, (TURNS_ENV, path), (MEMBER_ENV, member.key)))


def run_instance(
    group: Group,
    index: int,
    plan: Plan,
    options: Callable[[Member], WorkerOptions],
    launcher: Launcher = run_cell_processes,
    prefix: str = "",
) -> Instance:
    """Run instance ``index`` of ``group``: start every member's processes (``options(member)``:
    the worker options of its side), grant the calibration turns, ``plan.blocks`` blocks of
    window turns and the finishing turns; collect every member's end. Leaves no process behind."""
    instance = Instance(group, index)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="harness-turns-") as folder:
        coordinator = Coordinator(Path(folder))
        threads: list[threading.Thread] = []

        def member_thread(i: int, member: Member) -> None:
            opts = _member_options(options(member), member, coordinator.path)
            for end in each_cell([member.cell], opts, launcher, prefix=f"{prefix}m{i}-"):
                instance.ends[member.key] = end

        for i, member in enumerate(group.members):
            t = threading.Thread(target=member_thread, args=(i, member), daemon=True)
            t.start()
            threads.append(t)
        try:
            _coordinate(coordinator, group, plan, instance, lambda: all(t.is_alive() for t in threads))
        except Dropped as e:
            instance.dropped = str(e)
        finally:
            coordinator.close()
            for t in threads:
                while t.is_alive():
                    t.join(POLL_S)
    instance.wall_s = time.monotonic() - t0
    if not instance.dropped:
        failed = [m.key for m in group.members if instance.ends.get(m.key) is None]
        if failed:
            instance.dropped = f"no record from {', '.join(failed)}"
    return instance


def _coordinate(
    coordinator: Coordinator, group: Group, plan: Plan, instance: Instance, alive: Callable[[], bool]
) -> None:
    """The grants of one instance (see the module docstring); Dropped when it cannot go on."""
    members = group.members
    coordinator.gather({m.key: timing_processes(m) for m in members}, plan.ready_timeout_s, alive)
    for m in members:
        replies = coordinator.ask(m.key, {"do": Do.CALIBRATE, "window_s": plan.turn_s}, plan.turn_timeout_s)
        instance.steps[m.key] = int(replies[0].get("steps") or 0)
    for block in range(plan.blocks):
        for i in turn_order(len(members), block, plan.seed + instance.index):
            m = members[i]
            replies = coordinator.ask(m.key, {"do": Do.WINDOW, "block": block}, plan.turn_timeout_s)
            seconds = max(float(r.get("seconds") or 0.0) for r in replies)
            examples = instance.steps[m.key] * m.cell.effective_batch * m.cell.tenants
            instance.turns.append(Turn(block, m.key, seconds, examples))
    for m in members:
        coordinator.ask(m.key, {"do": Do.FINISH}, plan.turn_timeout_s)


def member_ends(instances: Sequence[Instance], key: str) -> list[CellEnd]:
    """Every end of member ``key`` over completed instances."""
    return [i.ends[key] for i in instances if not i.dropped and key in i.ends]
