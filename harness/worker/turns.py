"""The worker's end of the turns channel (:mod:`harness.contract.turns`): connect to the
coordinator, say hello once the first call is over, then block in a read (no CPU) until granted
a turn."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

from harness.contract.turns import MEMBER_ENV, TURNS_ENV, Do, Grant, Hello, Reply


class TurnsClosed(RuntimeError):
    """The coordinator closed the channel: the group instance was dropped (a member failed)."""


@dataclass
class TurnClient:
    """One process's connection to the coordinator."""

    sock: socket.socket
    member: str
    index: int
    on_window: Callable[[], None] = lambda: None
    """Called at each window grant before the window (the test hook's ``@turn`` faults)."""

    def __post_init__(self) -> None:
        self._reader = self.sock.makefile("r", encoding="utf-8")

    def _send(self, message: Hello | Reply) -> None:
        self.sock.sendall((json.dumps(message) + "\n").encode())

    def hello(self) -> None:
        self._send({"hello": self.member, "index": self.index})

    def grant(self) -> Grant:
        """Block until the coordinator grants something (TurnsClosed when it closes the channel)."""
        line = self._reader.readline()
        if not line:
            raise TurnsClosed("the turns coordinator closed the channel (the group instance was dropped)")
        grant: Grant = json.loads(line)
        if grant.get("do") == Do.WINDOW:
            self.on_window()
        return grant

    def reply(self, reply: Reply) -> None:
        try:
            self._send(reply)
        except OSError as e:
            raise TurnsClosed(f"the turns coordinator is gone: {e}") from None

    def close(self) -> None:
        self._reader.close()
        self.sock.close()


def connect(index: int) -> TurnClient | None:
    """The client of this process (process ``index`` of its member) when the launcher made it part
    of a group instance (:data:`TURNS_ENV` set), else None."""
    path = os.environ.get(TURNS_ENV)
    if not path:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return TurnClient(sock, os.environ.get(MEMBER_ENV, ""), index)
