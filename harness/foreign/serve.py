"""The co-tenant's end of the turns channel: say hello after the first step, then serve grants (the
three kinds of turn: docs/how-to/co-tenants.md, "What is measured"). A window taken together
(``until: stop``) checks between steps, without blocking, whether the parent said stop."""

from __future__ import annotations

import json
import os
import select
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.contract.tenant import UNTIL_STOP, TenantFacts
from harness.contract.turns import TURNS_ENV, Do, Grant, Reply
from harness.foreign.trainer import ForeignTrainer

CALIBRATION_STEPS = 3
"""Steps timed to size a window (after the warm-up ones)."""
WARMUP_STEPS = 2


@dataclass
class Channel:
    """A line-oriented connection to the coordinator that can also be polled without blocking."""

    sock: socket.socket
    buffer: bytes = field(default=b"")

    def send(self, message: object) -> None:
        self.sock.sendall((json.dumps(message) + "\n").encode())

    def receive(self, timeout_s: float | None = None) -> Grant | None:
        """The next grant: waiting up to ``timeout_s`` for each part of it (None: until it comes);
        None when nothing came in time. ConnectionError when the coordinator closed the channel."""
        while b"\n" not in self.buffer:
            if timeout_s is not None and not select.select([self.sock], [], [], timeout_s)[0]:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(
                    "the turns coordinator closed the channel (the group instance was dropped)"
                )
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        grant: Grant = json.loads(line)
        return grant


def connect() -> Channel:
    """The channel to the coordinator whose socket :data:`TURNS_ENV` names."""
    path = os.environ.get(TURNS_ENV)
    if not path:
        raise RuntimeError(f"{TURNS_ENV} is not set: a co-tenant runs only inside a group instance")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return Channel(sock)


def timed_steps(step: Callable[[], None], steps: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of ``steps`` steps."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return time.perf_counter() - t0, time.process_time() - c0


def calibrate(step: Callable[[], None], window_s: float) -> int:
    """Steps of a window of about ``window_s`` seconds (at least 1), after warm-up steps."""
    timed_steps(step, WARMUP_STEPS)
    seconds, _cpu = timed_steps(step, CALIBRATION_STEPS)
    return max(1, round(window_s / (seconds / CALIBRATION_STEPS)))


def until_stopped(step: Callable[[], None], channel: Channel) -> Reply:
    """Train until the parent says stop; the whole steps that ended before the check that saw
    the stop, and their seconds (the step in progress when it came is left out)."""
    t0, c0 = time.perf_counter(), time.process_time()
    steps, end, cpu = 0, t0, c0  # the whole steps counted, when the last one ended, its CPU clock
    while True:
        step()
        grant = channel.receive(timeout_s=0.0)
        if grant is not None:
            if grant.get("do") != Do.STOP:
                raise RuntimeError(f"expected a stop during a window taken together, got {grant}")
            break
        steps, end, cpu = steps + 1, time.perf_counter(), time.process_time()
    if not steps:  # the stop came during the first step: that step is all there is
        steps, end, cpu = 1, time.perf_counter(), time.process_time()
    return {"done": Do.WINDOW, "steps": steps, "seconds": end - t0, "cpu_s": cpu - c0}


def serve(trainer: ForeignTrainer, channel: Channel, key: str, facts: TenantFacts) -> None:
    """Say hello as ``key``, then answer grants until the finishing one (replied with ``facts``)."""
    channel.send({"hello": key, "index": 0})
    steps = 1
    while True:
        grant = channel.receive()
        assert grant is not None
        do = grant.get("do")
        if do == Do.CALIBRATE:
            known = int(grant.get("steps") or 0)  # an earlier instance's: no calibration
            steps = known or calibrate(trainer.step, float(grant.get("window_s", 0.2)))
            channel.send({"done": Do.CALIBRATE, "steps": steps})
        elif do == Do.WINDOW and grant.get("until") == UNTIL_STOP:
            channel.send(until_stopped(trainer.step, channel))
        elif do == Do.WINDOW:
            seconds, cpu_s = timed_steps(trainer.step, steps)
            channel.send({"done": Do.WINDOW, "steps": steps, "seconds": seconds, "cpu_s": cpu_s})
        elif do == Do.FINISH:
            channel.send({"done": Do.FINISH, "facts": {**facts, "final_loss": trainer.loss()}})
            return
        else:
            raise RuntimeError(f"unexpected grant {grant}")
