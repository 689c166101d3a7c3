"""Worker process: sets up the devices of one cell, measures (or verifies) it, emits JSON events.

Started by :mod:`harness.launch` as ``python -m harness.worker JOB EVENTS``, one process per cell
(and task). JOB is a JSON :class:`~harness.contract.job.Job`; EVENTS the JSON-lines file this
process appends to (:mod:`harness.contract.events`). A cell that raises becomes a ``failed`` record
carrying the error, and the worker exits 1. A ``verify`` worker sets its numerics before anything
else touches TensorFlow (:func:`~harness.worker.devices.configure_numerics`; :func:`failure_reason`)."""

from __future__ import annotations

import json
import os
import resource
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TextIO

from harness.contract.columns import flatten
from harness.contract.events import Event, EventLine, Facts, ProcessRow
from harness.contract.forks import FORKED_ENV
from harness.contract.job import TENANT_BARRIER_ENV, Job
from harness.contract.records import CellRow, Status, WindowRow
from harness.formulas.memory import oom_text
from harness.results.measurement import started_row
from harness.spec.strategies import Role
from harness.worker import turns
from harness.worker.barrier import start_barrier
from harness.worker.collectives import measure_collectives
from harness.worker.devices import (
    configure_devices,
    configure_numerics,
    op_determinism_enabled,
    prepare_task_gpus,
)
from harness.worker.faults import _inject
from harness.worker.fingerprint import collect, fingerprint
from harness.worker.measure import run_cell, verify_cell
from harness.worker.nccl import LOG_FILE_ENV, process_transports
from harness.worker.training.loops import chief_agreement
from harness.worker.training.strategies import effective_cross_device_ops, make_strategy

ERROR_TAIL_CHARS = 1500


def summarize_error(e: BaseException, limit: int = ERROR_TAIL_CHARS) -> str:
    """``Type: message`` without TensorFlow's "Detected at node ... defined at" stack dumps."""
    text = getattr(e, "message", None) or str(e)
    lines = (line.strip() for line in text.splitlines())
    kept = [line for line in lines if line and not line.startswith(("File ", "Detected at node"))]
    summary = " ".join(dict.fromkeys(kept))  # TF repeats the same lines per replica
    return f"{type(e).__name__}{oom_text(summary)}: {summary}"[:limit]


DETERMINISM_PREFIX = "op determinism: "
"""Starts the reason of a cell that failed because op determinism was on (verify)."""


def failure_status(e: BaseException, reason: str) -> Status:
    """UNSUPPORTED where op determinism has no deterministic kernel for one of the cell's ops
    (TensorFlow's UnimplementedError, the reason led by :data:`DETERMINISM_PREFIX`: XLA on a GPU,
    measured on an H200, 2026-11-26; Keras itself turns XLA off under op determinism), a
    configuration verify cannot check bit for bit; FAILED otherwise."""
    unimplemented = type(e).__name__ == "UnimplementedError"
    return Status.UNSUPPORTED if unimplemented and reason.startswith(DETERMINISM_PREFIX) else Status.FAILED


def failure_reason(e: BaseException, deterministic: bool, limit: int = ERROR_TAIL_CHARS) -> str:
    """A failed cell's reason: :func:`summarize_error`, led by :data:`DETERMINISM_PREFIX` when the
    worker ran with op determinism (``deterministic``) and TensorFlow's error is about it (an op
    with no deterministic kernel raises UnimplementedError "Deterministic GPU implementation of ...
    not available"; an unseeded random op, "Random ops require a seed to be set when determinism
    is enabled"), so that verify's table says why rather than only that the cell failed."""
    summary = summarize_error(e, limit)
    if deterministic and "determinis" in summary.lower():
        return (DETERMINISM_PREFIX + summary)[:limit]
    return summary


def cap_memory(gib: float) -> None:
    """``--worker-memory-gib``: this process's private memory capped (``RLIMIT_DATA``, soft limit;
    the hard one only where it is lower), so that an allocation past it fails as TensorFlow's
    ResourceExhaustedError rather than the kernel killing the process; 0: no cap."""
    if gib <= 0:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = int(gib * 2**30)
    soft = cap if hard == resource.RLIM_INFINITY else min(cap, hard)  # RLIM_INFINITY: -1
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _emit(stream: TextIO, event: EventLine) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def _reach(events: TextIO, job: Job, event: Event) -> None:
    """Emit ``start`` (with the cell id) or ``joined``, then run the fault hook at that point."""
    line: EventLine = {"event": event}
    if event == Event.START:
        line["cell_id"] = job.cell.id
    _emit(events, line)
    _inject(job.inject_fault, job.cell, job.launch.index, event.value)


def _join(events: TextIO, job: Job, start: Callable[[], Any]) -> Any:
    """A cluster task's way in: emit start, prepare its GPUs (memory growth; a clear failure where a
    computing task, TF_CONFIG's, sees fewer GPUs than the cell's replicas), call ``start`` (the
    strategy or the server, which join the cluster in TF_CONFIG), emit joined; what ``start`` made."""
    _reach(events, job, Event.START)
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
    kind, index = task.get("type", "chief"), task.get("index", 0)
    replicas = job.cell.replicas if kind in job.cell.kind.training_tasks else 0
    prepare_task_gpus(job.options.platform, replicas, f"{kind} {index}")
    made = start()
    _reach(events, job, Event.JOINED)
    return made


def serve(events: TextIO, job: Job) -> int:
    """A parameter-server cell's worker or ps task: start this task's ``tf.distribute.Server``
    (from TF_CONFIG) and serve the coordinator until the launcher stops this process."""
    import tensorflow as tf

    def server() -> Any:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        spec, task, index = resolver.cluster_spec(), resolver.task_type, resolver.task_id
        return tf.distribute.Server(spec, job_name=task, task_index=index, protocol="grpc", start=True)

    _join(events, job, server).join()  # never returns
    return 0


def _set_up(events: TextIO, job: Job) -> tuple[Any, str, list[str], Facts]:
    """(strategy or None, device type, device names, facts): a multi-worker task creates its
    strategy first (collectives must be configured before TensorFlow starts its runtime; the
    launcher already masked this worker's devices); a single-process cell sets up its devices.
    Emits ready (and start) on the way."""
    cell = job.cell
    if cell.kind.multi_worker:
        import tensorflow as tf

        strategy = _join(events, job, lambda: make_strategy(cell, []))
        device_type = job.options.platform.device_kind.upper()
        devices = [d.name for d in tf.config.list_logical_devices(device_type)]
    else:
        strategy = None
        device_type, devices = configure_devices(job.options.platform, cell.replicas)
    facts = collect(device_type)
    facts["fingerprint"] = fingerprint(facts)
    _emit(events, {"event": Event.READY, "facts": facts, "devices": devices})
    if strategy is None:
        _reach(events, job, Event.START)
    return strategy, device_type, devices, facts


def _run(
    row: CellRow, job: Job, strategy: Any, device_type: str, devices: list[str]
) -> tuple[CellRow, ProcessRow, list[WindowRow]]:
    """Time the all-reduce payloads of this cell's topology (:mod:`harness.worker.collectives`),
    verify (train a fixed number of updates) or measure the cell: (its row, what else the process
    reports, window rows)."""
    cell, options, launch = job.cell, job.options, job.launch
    if options.collectives_max_bytes:
        strategy = strategy or make_strategy(cell, devices)
        agree = chief_agreement(strategy, cell.workers)
        settings = options.settings
        results = measure_collectives(
            strategy, cell, options.collectives_max_bytes, agree, settings.window_s, settings.repeats
        )
        ran = replace(row.ran, effective_cross_device_ops=effective_cross_device_ops(strategy))
        return replace(row, status=Status.OK, reason="", ran=ran), {"collectives": results}, []
    if options.verify_updates:
        verified, report = verify_cell(row, cell, options, devices, strategy, launch.role == Role.CHIEF)
        return verified, {**report, "op_determinism": op_determinism_enabled()}, []
    barrier = os.environ.get(TENANT_BARRIER_ENV)
    ready = start_barrier(barrier, launch.index, launch.meet, options.settings.rendezvous_timeout_s)
    client = turns.connect(launch.index)
    if client is not None:
        client.on_window = lambda: _inject(job.inject_fault, cell, launch.index, "turn")
    measured, windows = run_cell(
        row, cell, options, devices, device_type, strategy, launch.hosts, ready, client
    )
    return measured, {}, windows


def main(argv: list[str]) -> int:
    """Run the job in ``argv[0]``, appending events to ``argv[1]``; 1 when the cell raised."""
    job_path, events_path = argv
    with open(job_path) as f:
        job = Job.from_json(json.load(f))
    cell = job.cell
    cap_memory(job.options.settings.worker_memory_gib)
    configure_numerics(job.options.deterministic)  # before any op, strategy or server
    with open(events_path, "a") as events:
        if job.launch.role == Role.SERVER:
            return serve(events, job)
        strategy, device_type, devices, facts = _set_up(events, job)
        row = started_row(cell, job.options.settings, facts, job.launch.cores, job.launch.oversubscribed)
        try:
            row, report, windows = _run(row, job, strategy, device_type, devices)
        except Exception as e:  # noqa: BLE001 -- the cell's error becomes its row; the sweep goes on
            traceback.print_exc()
            reason = failure_reason(e, job.options.deterministic)
            failed = replace(row, status=failure_status(e, reason), reason=reason)
            _emit(events, {"event": Event.RECORD, "row": flatten(failed), "windows": []})
            return 1
        if job.launch.role != Role.CHIEF:
            _emit(events, {"event": Event.FINISHED, "cell_id": cell.id})
            return 0
        ran = replace(
            row.ran,
            nccl_transport=process_transports(os.environ.get(LOG_FILE_ENV), os.getpid()),
            forked=FORKED_ENV in os.environ,
        )
        row = replace(row, ran=ran)  # the chief reports the cell; its windows hold every worker's
        _emit(events, {"event": Event.RECORD, "row": flatten(row), "report": report, "windows": windows})
    return 0
