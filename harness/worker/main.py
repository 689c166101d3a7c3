"""Worker process: sets up the devices of one cell, measures (or verifies) it, emits JSON events.

Started by :mod:`harness.launch` as ``python -m harness.worker JOB EVENTS``, one process per cell.
JOB is a JSON file (:class:`Job`); EVENTS is a JSON-lines file this process appends to:

    {"event": "ready", "facts": {...}}             after TensorFlow and the devices are set up
    {"event": "start", "cell_id": ...}             the cell starts
    {"event": "record", "row": {...}, "windows": [...]}

A cell that raises becomes a ``failed`` record carrying the error, and the worker exits 1.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, TextIO

from harness.launch.contract import TENANT_BARRIER_ENV, Job
from harness.results.rows import cell_columns, fact_columns
from harness.spec.axes import MULTI_WORKER_STRATEGIES
from harness.spec.cell import Cell
from harness.worker.barrier import tenant_barrier
from harness.worker.build.strategies import make_strategy
from harness.worker.devices import configure_devices
from harness.worker.faults import _inject
from harness.worker.fingerprint import collect, fingerprint
from harness.worker.measure import run_cell, verify_cell
from harness.worker.peak import measure_matmul_peak

ERROR_TAIL_CHARS = 1500


def summarize_error(e: BaseException, limit: int = ERROR_TAIL_CHARS) -> str:
    """``Type: message`` without TensorFlow's "Detected at node ... defined at" stack dumps."""
    text = getattr(e, "message", None) or str(e)
    kept = [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith(("File ", "Detected at node"))]
    summary = " ".join(dict.fromkeys(kept))  # TF repeats the same lines per replica
    return f"{type(e).__name__}: {summary}"[:limit]


def _emit(stream: TextIO, event: dict[str, Any]) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def _join_cluster(cell: Cell, events: TextIO, job: Job) -> tuple[Any, str, list[str]]:
    """Multi-worker: create the strategy first (collectives must be configured before TensorFlow
    starts its runtime; the launcher already masked this worker's devices), announcing the join."""
    import tensorflow as tf

    _emit(events, {"event": "start", "cell_id": cell.id})
    _inject(job.inject_fault, cell, job.worker_index, "start")
    strategy = make_strategy(cell, [])
    _emit(events, {"event": "joined"})
    _inject(job.inject_fault, cell, job.worker_index, "joined")
    kind = "GPU" if job.platform.device_kind == "gpu" else "CPU"
    return strategy, kind, [d.name for d in tf.config.list_logical_devices(kind)]


def serve(cell: Cell, events: TextIO, job: Job) -> int:
    """A parameter-server cell's worker or ps task: start this task's ``tf.distribute.Server``
    (from TF_CONFIG) and serve the coordinator until the launcher stops this process."""
    import tensorflow as tf

    _emit(events, {"event": "start", "cell_id": cell.id})
    _inject(job.inject_fault, cell, job.worker_index, "start")
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id, protocol="grpc", start=True)
    _emit(events, {"event": "joined"})
    _inject(job.inject_fault, cell, job.worker_index, "joined")
    server.join()  # never returns
    return 0


def main(argv: list[str]) -> int:
    job_path, events_path = argv
    with open(job_path) as f:
        job = Job.from_json(json.load(f))
    cell = job.cell
    if job.role == "server":
        with open(events_path, "a") as events:
            return serve(cell, events, job)
    with open(events_path, "a") as events:
        strategy = None
        if cell.strategy in MULTI_WORKER_STRATEGIES:
            strategy, device_type, devices = _join_cluster(cell, events, job)
        else:
            device_type, devices = configure_devices(job.platform, cell.replicas)
        facts = collect(device_type)
        facts["fingerprint"] = fingerprint(facts)
        _emit(events, {"event": "ready", "facts": facts, "devices": devices})
        if strategy is None:
            _emit(events, {"event": "start", "cell_id": cell.id})
            _inject(job.inject_fault, cell, job.worker_index, "start")
        cores = job.cores_per_worker or facts["host_cores"]
        oversubscribed = job.oversubscribed
        if oversubscribed is None:
            oversubscribed = cores * cell.workers > facts["host_cores"]
        row = {**cell_columns(cell, job.protocol), **fact_columns(facts), "cores_per_worker": cores,
               "oversubscribed": oversubscribed}
        if devices:
            def peak(dtype: str) -> float | None:
                return measure_matmul_peak(devices[0], device_type, dtype)
        else:  # a parameter-server coordinator without the workers' device kind: no peak here
            def peak(dtype: str) -> float | None:
                return None
        try:
            if job.verify_updates:
                measured, windows = verify_cell(cell, job.verify_updates, job.protocol.seed, devices,
                                                job.weights_dir or ".", job.mnist_path, strategy,
                                                save=job.role == "chief"), []
            else:
                ready = tenant_barrier(os.environ.get(TENANT_BARRIER_ENV), job.worker_index,
                                       cell.tenants, job.protocol.rendezvous_timeout_s)
                measured, windows = run_cell(cell, job.protocol, devices, device_type, peak,
                                             job.mnist_path, strategy, job.hosts, ready)
        except Exception as e:  # the cell's error becomes its row; the sweep goes on
            traceback.print_exc()
            row.update(status="failed", reason=summarize_error(e))
            _emit(events, {"event": "record", "row": row, "windows": []})
            return 1
        row.update(measured)
        if job.role == "chief":  # the chief reports the cell; its windows hold every worker's
            _emit(events, {"event": "record", "row": row, "windows": windows})
        else:
            _emit(events, {"event": "finished", "cell_id": cell.id})
    return 0

