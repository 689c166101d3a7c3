"""The co-tenant's end of the turns channel, with a trainer that only sleeps: calibration, a window
alone, a window taken until stopped (only whole steps that ended before the stop count), finish."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from harness.contract.tenant import UNTIL_STOP
from harness.foreign.serve import Channel, calibrate, serve, timed_steps, until_stopped
from harness.foreign.trainer import ForeignTrainer

STEP_S = 0.01


class Sleeper(ForeignTrainer):
    version = "0"

    steps = 0

    def _update(self, batch: int) -> float:
        time.sleep(STEP_S)
        self.steps += 1
        return 1.5

    def device_name(self) -> str:
        return "cpu"

    def flops_per_example(self) -> int:
        return 7


class Lines:
    """The coordinator's side: one JSON object per line."""

    def __init__(self, sock: socket.socket) -> None:
        self.reader = sock.makefile("r", encoding="utf-8")

    def next(self) -> dict:
        return json.loads(self.reader.readline())


def test_calibration_sizes_a_window_from_timed_steps():
    assert calibrate(Sleeper().step, 10 * STEP_S) == pytest.approx(10, abs=3)
    seconds, cpu = timed_steps(Sleeper().step, 3)
    assert seconds >= 3 * STEP_S and cpu >= 0


def test_until_stopped_counts_only_steps_that_ended_before_the_stop():
    ours, theirs = socket.socketpair()
    trainer = Sleeper()
    channel = Channel(ours)
    threading.Timer(0.1, lambda: theirs.sendall(b'{"do": "stop"}\n')).start()
    reply = until_stopped(trainer.step, channel)
    assert reply["done"] == "window"
    assert reply["steps"] <= trainer.steps - 1  # the step running when the stop came is left out
    assert reply["seconds"] == pytest.approx(reply["steps"] * STEP_S, rel=0.5)
    ours.close()
    theirs.close()


def test_until_stopped_refuses_another_grant():
    ours, theirs = socket.socketpair()
    theirs.sendall(b'{"do": "window"}\n')
    with pytest.raises(RuntimeError, match="expected a stop"):
        until_stopped(Sleeper().step, Channel(ours))


def test_serve_answers_every_grant_then_reports_its_facts():
    ours, theirs = socket.socketpair()
    trainer = Sleeper()
    thread = threading.Thread(target=serve, args=(trainer, Channel(ours), "k~jax", {"framework": "jax"}))
    thread.start()
    lines = Lines(theirs)
    assert lines.next() == {"hello": "k~jax", "index": 0}
    theirs.sendall(b'{"do": "calibrate", "window_s": 0.05}\n')
    steps = lines.next()["steps"]
    assert steps >= 1
    theirs.sendall(b'{"do": "window", "block": 0}\n')
    window = lines.next()
    assert window["steps"] == steps and window["seconds"] >= steps * STEP_S
    theirs.sendall((json.dumps({"do": "window", "block": 0, "until": UNTIL_STOP}) + "\n").encode())
    time.sleep(0.05)
    theirs.sendall(b'{"do": "stop"}\n')
    assert lines.next()["done"] == "window"
    theirs.sendall(b'{"do": "finish"}\n')
    finish = lines.next()
    assert finish["facts"] == {"framework": "jax", "final_loss": 1.5}
    thread.join(5)
    assert not thread.is_alive()


def test_a_closed_channel_ends_the_co_tenant():
    ours, theirs = socket.socketpair()
    theirs.close()
    with pytest.raises(ConnectionError, match="closed the channel"):
        Channel(ours).receive()
