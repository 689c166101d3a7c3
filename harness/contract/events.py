"""The events a worker process reports: one JSON object per line of its EVENTS file, each with an
``event`` key from :class:`Event` and the fields of its typed record below:

    ready     {"facts": {...}, "devices": [...]}    TensorFlow and the devices are set up
    start     {"cell_id": ...}                      the cell starts (start-up is over)
    joined    {}                                    a multi-worker task has joined its cluster
    record    {"row": {...}, "windows": [...]}      the cell's row (the chief, or a failure)
    finished  {"cell_id": ...}                      a peer's part of the cell is done
    failed    {"cell_id": ..., "reason": ...}       made by the parent when a worker dies or overruns
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, TypedDict

from harness.contract.records import CellRow, WindowRow


class Event(StrEnum):
    """The ``event`` of each line a worker appends to its events file (see the module docstring)."""

    READY = "ready"
    START = "start"
    JOINED = "joined"
    RECORD = "record"
    FINISHED = "finished"
    FAILED = "failed"



class ReadyEvent(TypedDict):
    event: Literal[Event.READY]
    facts: dict[str, Any]
    """The process's fingerprint facts (:mod:`harness.worker.fingerprint`)."""
    devices: list[str]


class StartEvent(TypedDict):
    event: Literal[Event.START]
    cell_id: str


class JoinedEvent(TypedDict):
    event: Literal[Event.JOINED]


class RecordEvent(TypedDict):
    event: Literal[Event.RECORD]
    row: CellRow
    windows: list[WindowRow]


class FinishedEvent(TypedDict):
    event: Literal[Event.FINISHED]
    cell_id: str


class FailedEvent(TypedDict):
    event: Literal[Event.FAILED]
    cell_id: str
    reason: str


WorkerEvent = ReadyEvent | StartEvent | JoinedEvent | RecordEvent | FinishedEvent | FailedEvent
"""Any line of an events file."""
