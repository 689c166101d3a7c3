"""The turns channel: how the parent's coordinator grants a group's live processes their turns. Each
process that times windows connects to the coordinator's Unix socket (its path in
:data:`TURNS_ENV`, the member's key in :data:`MEMBER_ENV`), then blocks in a read, using no CPU,
until told what to do. One JSON object per line each way:

parent -> worker (:class:`Grant`)         worker -> parent (:class:`Reply`)
``{"do": "calibrate", "window_s": s}``    ``{"done": "calibrate", "steps": n}`` after calibrating a
                                          window to about ``s`` seconds and its warm-up windows
                                          (with ``"steps": n``, the steps an earlier instance of
                                          the cell calibrated: only the warm-up windows)
``{"do": "window", "block": b}``          ``{"done": "window", "seconds": s, "cpu_s": c}``: one timed
                                          window of the calibrated steps (s seconds of wall time,
                                          c seconds of this process's CPU time, all threads)
``{"do": "finish"}``                      ``{"done": "finish"}`` after the cell's checks and parts
                                          (then the worker reports its record and exits)

A worker first says ``{"hello": key, "index": i}`` (its member's key, its process index) once its
first call is over. A closed socket on either side ends the instance: the worker raises, the
coordinator drops the instance and stops every process of the group. Pure data: no sockets here."""

from __future__ import annotations

from enum import StrEnum
from typing import TypedDict

TURNS_ENV = "HARNESS_TURNS"
"""Path of the coordinator's Unix socket (set only for processes of a group instance)."""

MEMBER_ENV = "HARNESS_TURN_MEMBER"
"""The key of the member a process belongs to (``harness.spec.groups.Member.key``)."""


class Do(StrEnum):
    """What a grant asks for."""

    CALIBRATE = "calibrate"
    WINDOW = "window"
    FINISH = "finish"
    STOP = "stop"
    """End a window taken until told (a co-tenant of another framework: :mod:`harness.contract.tenant`)."""


class Hello(TypedDict):
    hello: str
    index: int


class Grant(TypedDict, total=False):
    do: str
    window_s: float
    steps: int
    """Calibrate: the window's steps an earlier instance of the same cell calibrated (skip it)."""
    block: int
    until: str
    """A co-tenant of another framework's window taken together: train until told to stop
    (:mod:`harness.contract.tenant`)."""


class Reply(TypedDict, total=False):
    done: str
    steps: int
    seconds: float
    cpu_s: float
