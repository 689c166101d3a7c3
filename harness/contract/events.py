"""The events a worker process reports: one JSON object per line of its EVENTS file, each with an
``event`` key from :class:`Event` and the fields of its typed record below:

    ready     {"facts": {...}, "devices": [...]}    TensorFlow and the devices are set up
    start     {"cell_id": ...}                      the cell starts (start-up is over)
    joined    {}                                    a multi-worker task has joined its cluster
    record    {"row": {...}, "report": {...}, "windows": [...]}  the cell's row (the chief, or a failure)
    finished  {"cell_id": ...}                      a peer's part of the cell is done
    failed    {"cell_id": ..., "reason": ...}       made by the parent when a worker dies or overruns"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict

from harness.contract.columns import Columns
from harness.contract.records import WindowRow


class Event(StrEnum):
    """The ``event`` of each line a worker appends to its events file (see the module docstring)."""

    READY = "ready"
    START = "start"
    JOINED = "joined"
    RECORD = "record"
    FINISHED = "finished"
    FAILED = "failed"


class Facts(TypedDict, total=False):
    """A worker's fingerprint facts (:func:`harness.worker.fingerprint.collect`): where it ran.
    Every field but ``env`` and ``fingerprint`` feeds the fingerprint hash."""

    host_cpu: str
    host_cores: int
    """Logical cores the OS reports."""
    gpu_names: list[str]
    gpu_compute_capability: list[list[int]]
    nvidia_driver: str
    tf_version: str
    keras_version: str
    python_version: str
    cuda_version: str
    cudnn_version: str
    rocm_version: str
    tensor_float_32: bool
    intra_op_threads: int
    """Threads of TensorFlow's intra-op pool."""
    inter_op_threads: int
    env: dict[str, str]
    """TF_*, NCCL_*, OMP_*, ... variables of the process."""
    device_type: str
    """GPU or CPU."""
    device_name: str
    fingerprint: str
    """16 hex digits: the hash of the stable facts."""


class ProcessRow(TypedDict, total=False):
    """What one worker process may report in its record event besides its cell row (the event's
    ``report``): under ``run --sweep collectives`` the all-reduce payloads it timed instead of
    training figures, under ``verify`` where its weights are. Never stored."""

    collectives: list[dict[str, Any]]
    """One entry per payload (:func:`harness.worker.collectives.measure_collectives`)."""
    weights_path: str
    """``verify``: the .npz file of the cell's weights before and after training."""
    op_determinism: bool
    """``verify``: whether TensorFlow's op determinism was on while the cell trained (read back from
    TensorFlow; ``WorkerOptions.deterministic``). Whether TensorFloat-32 was is the row's
    ``build_info`` ``tensor_float_32``."""


class EventLine(TypedDict, total=False):
    """One line of an events file, or an event a launcher makes for the parent: ``event`` always,
    the other fields as the table above gives them per event (launchers add ``facts``, the
    process's facts once it reported them, to every event they pass on)."""

    event: Event
    facts: Facts | None
    devices: list[str]
    cell_id: str
    row: Columns
    """The process's :class:`~harness.contract.records.CellRow` as its flat columns
    (:func:`harness.contract.columns.flatten`)."""
    report: ProcessRow
    windows: list[WindowRow]
    reason: str
