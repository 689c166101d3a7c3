"""The job and event contract between the parent (:mod:`harness.launch`) and a worker process."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol


@dataclass(frozen=True)
class Job:
    cell: Cell
    protocol: Protocol
    platform: Platform
    mnist_path: str | None = None
    inject_fault: str | None = None
    verify_updates: int | None = None
    """When set, train each cell for this many updates and save its weights (no timing)."""
    weights_dir: str | None = None
    worker_index: int = 0
    """This process's position in a multi-worker cell's task list (0 = the chief)."""
    cores_per_worker: int | None = None
    """Cores the launcher gave each worker (None: the whole host)."""
    role: str = "chief"
    """chief: runs the cell and reports its row; peer: runs the cell (MultiWorkerMirrored worker
    other than the chief); server: a parameter-server cell's worker or ps task, a
    ``tf.distribute.Server`` that the chief's coordinator drives."""
    hosts: int = 1
    """Distinct hosts the cell's workers run on (1 for local processes)."""
    oversubscribed: bool | None = None
    """Whether the cell's processes ask for more cores than the host has (None: the worker decides)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Job":
        return cls(**{**d, "cell": Cell.from_dict(d["cell"]),
                      "protocol": Protocol(**d["protocol"]), "platform": Platform(**d["platform"])})


TENANT_BARRIER_ENV = "HARNESS_TENANT_BARRIER"
"""Folder of the co-tenants' start barrier, set by the launcher for cells with tenants > 1."""


WORKER_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


FAULT_ENV = "HARNESS_INJECT_FAULT"
"""Test hook, passed to workers: ``kill:<cell_id>`` or ``hang:<cell_id>`` (at the cell's start);
``kill@N:`` / ``hang@N:<cell_id>`` (task N of a multi-worker cell, once every task has joined);
``absent@N:<cell_id>`` (task N is never started)."""


def injected_fault() -> str | None:
    return os.environ.get(FAULT_ENV) or None


# ------------------------------------------------------------------------------------------------
# Worker processes
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerOptions:
    """What a worker needs besides its cells. ``startup_timeout_s``: seconds to import TensorFlow and
    set up devices."""

    protocol: Protocol
    platform: Platform
    log_dir: Path
    mnist_path: str | None = None
    startup_timeout_s: float = 180.0
    verify_updates: int | None = None
    weights_dir: str | None = None


@dataclass(frozen=True)
class Launch:
    """How to start one process of a cell: its environment additions (TF_CONFIG, threads, device
    mask), its role (see :class:`harness.worker.Job`), its position in the cell's task list, the
    cores each worker gets, the hosts the workers span and whether the cell oversubscribes cores."""

    env: tuple[tuple[str, str], ...] = ()
    role: str = "chief"
    index: int = 0
    cores: int | None = None
    hosts: int = 1
    oversubscribed: bool | None = None


UNSUPPORTED_SIGNS = ("No OpKernel was registered", "not supported", "Could not satisfy device",
                     "no supported devices", "NCCL is not supported")
"""Error texts that mean "this machine or build has no kernel or device for it" (vs a failure)."""
