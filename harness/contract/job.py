"""The job: what the parent (:mod:`harness.launch`) hands a worker process.

The parent writes a :class:`Job` as JSON and starts ``python -m harness.worker JOB EVENTS``; the
worker reads it back with :meth:`Job.from_json` and answers in EVENTS (:mod:`harness.contract.events`)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from harness.spec.cell import Cell
from harness.spec.protocol import Platform, Protocol
from harness.spec.strategies import Role


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker reads of the run's :class:`~harness.spec.protocol.Protocol`: how it times its cell
    (``window_s``, ``repeats``, ``warmup_windows``, ``min_window_steps``), its ``seed``, its wait for
    the other processes at the start barrier and a multi-worker rendezvous (``rendezvous_timeout_s``),
    its memory cap (``worker_memory_gib``) and whether it times its update's parts (``breakdown``, set
    per process). The rest stays in the parent. Made with :meth:`of` (the protocol holds the defaults)."""

    repeats: int
    window_s: float
    warmup_windows: int
    min_window_steps: int
    seed: int
    rendezvous_timeout_s: float
    worker_memory_gib: float
    breakdown: bool

    @classmethod
    def of(cls, protocol: Protocol) -> WorkerSettings:
        """The protocol's fields a worker reads."""
        return cls(**{f.name: getattr(protocol, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class WorkerOptions:
    """What every worker process of a run shares, and how its launcher starts and watches it:
    ``settings`` (what the worker reads of the protocol), ``log_dir``, the launcher's deadlines
    (``startup_timeout_s``: importing TensorFlow and setting up devices; ``cell_timeout_s``: the cell
    once started), and ``verify_updates``: when set, train each cell this many updates and save its
    weights under ``weights_dir`` (no timing)."""

    settings: WorkerSettings
    platform: Platform
    log_dir: Path
    mnist_path: str | None = None
    startup_timeout_s: float = 180.0
    cell_timeout_s: float = 600.0
    verify_updates: int | None = None
    weights_dir: str | None = None
    collectives_max_bytes: int | None = None
    """When set, each cell is an all-reduce topology: time the collectives payloads up to this many
    bytes (``--sweep collectives``) instead of training."""
    python: str | None = None
    """The interpreter worker processes run under (``ab``: each side's); None: this one's."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables added to every worker's environment (``ab``: each side's settings)."""
    deterministic: bool = False
    """``verify``: every worker runs with TensorFlow's op determinism on and TensorFloat-32 off
    (float32 matmuls and convolutions in float32's 23-bit mantissa, not TF32's 10-bit one), so that
    a cell's weights depend on what it computes, not on which kernels and summation order its
    process got, and the float32 tolerance judges float32 arithmetic. Measured runs leave both at
    TensorFlow's defaults: determinism slows training."""

    @classmethod
    def of(
        cls, protocol: Protocol, platform: Platform, log_dir: Path, mnist_path: str | None = None, **more: Any
    ) -> WorkerOptions:
        """The options of a run timed by ``protocol``: its worker settings and its cell deadline
        (``more``: the other fields)."""
        return cls(
            WorkerSettings.of(protocol),
            platform,
            log_dir,
            mnist_path,
            cell_timeout_s=protocol.cell_timeout_s,
            **more,
        )


@dataclass(frozen=True)
class Launch:
    """How one process of a cell is started: its environment additions (TF_CONFIG, threads, device
    mask), role, position in the cell's task list (0 = the chief; a co-tenant's index), the cores
    each worker gets (None: the whole host), the hosts the workers span, whether the cell's processes
    ask for more cores than the host has (None: the worker decides), and ``meet``: how many processes
    meet at the start barrier (:data:`TENANT_BARRIER_ENV`) after their first call (co-tenants)."""

    env: tuple[tuple[str, str], ...] = ()
    role: Role = Role.CHIEF
    index: int = 0
    cores: int | None = None
    hosts: int = 1
    oversubscribed: bool | None = None
    meet: int = 1


@dataclass(frozen=True)
class Job:
    """Everything one worker process reads: the cell, the run's options and its own launch."""

    cell: Cell
    options: WorkerOptions
    launch: Launch = Launch()
    inject_fault: str | None = None
    """Test hook (:data:`FAULT_ENV`)."""

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"]["log_dir"] = str(self.options.log_dir)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Job:
        o, la = d["options"], d["launch"]
        options = WorkerOptions(
            **{
                **o,
                "env": tuple(map(tuple, o.get("env", ()))),
                "settings": WorkerSettings(**o["settings"]),
                "platform": Platform(**{**o["platform"], "gpu_ids": tuple(o["platform"].get("gpu_ids", ()))}),
                "log_dir": Path(o["log_dir"]),
            }
        )
        launch = Launch(**{**la, "env": tuple(map(tuple, la["env"])), "role": Role(la["role"])})
        return cls(Cell.from_dict(d["cell"]), options, launch, d.get("inject_fault"))


TENANT_BARRIER_ENV = "HARNESS_TENANT_BARRIER"
"""Folder of the start barrier that ``Launch.meet`` processes meet at after their first call: set
by the launcher for co-tenant cells."""

WORKER_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
"""Set in every worker and probe process."""

FAULT_ENV = "HARNESS_INJECT_FAULT"
"""Test hook, passed to workers: ``kill:<cell_id>`` or ``hang:<cell_id>`` (at the cell's start);
``kill@N:`` / ``hang@N:<cell_id>`` (task N of a multi-worker cell, once every task has joined);
``absent@N:<cell_id>`` (task N is never started); ``busy@N:<cell_id>`` (task N shares core 0 with a
busy loop once joined: a straggler). Several, each its own cell's, separated by ``;``."""


def injected_fault() -> str | None:
    return os.environ.get(FAULT_ENV) or None


PEAK_MODULE = "harness.worker.peak"
"""``python -m harness.worker.peak --device-kind K --dtypes D1,D2`` prints one JSON line per dtype:
``{"dtype", "flops_per_sec" (the process's best repeat), "repeats", "device", "tensor_float_32",
"tf32_override"}`` (NVIDIA_TF32_OVERRIDE, or null)."""
