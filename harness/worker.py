"""Worker process: sets up the devices of one cell, measures (or verifies) it, emits JSON events.

Started by :mod:`harness.launch` as ``python -m harness.worker JOB EVENTS``, one process per cell.
JOB is a JSON file (:class:`Job`); EVENTS is a JSON-lines file this process appends to:

    {"event": "ready", "facts": {...}}             after TensorFlow and the devices are set up
    {"event": "start", "cell_id": ...}             the cell starts
    {"event": "record", "row": {...}, "windows": [...]}

A cell that raises becomes a ``failed`` record carrying the error, and the worker exits 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from harness import metrics
from harness.data import make_dataset
from harness.energy import energy_meter
from harness.fingerprint import collect, fingerprint
from harness.loops import LOOPS, Trainer
from harness.models import MODELS
from harness.peak import measure_matmul_peak
from harness.records import LEARNING_RATE, cell_columns, fact_columns
from harness.spec import MULTI_WORKER_STRATEGIES, Cell, Platform, Protocol
from harness.strategies import effective_cross_device_ops, make_strategy
from harness.tenancy import alone_columns
from harness.timing import measure

COMPUTE_DTYPE = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
ERROR_TAIL_CHARS = 1500


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


def configure_devices(platform: Platform, replicas: int) -> tuple[str, list[str]]:
    """Make ``replicas`` devices visible (GPUs, or logical CPUs); returns (device type, names)."""
    import tensorflow as tf

    if platform.device_kind == "gpu":
        gpus = tf.config.list_physical_devices("GPU")[:replicas]
        tf.config.set_visible_devices(gpus, "GPU")
        for g in gpus:
            tf.config.experimental.set_memory_growth(g, True)
        kind = "GPU"
    else:
        tf.config.set_visible_devices([], "GPU")
        cpus = tf.config.list_physical_devices("CPU")
        if replicas > 1:
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
        kind = "CPU"
    devices = [d.name for d in tf.config.list_logical_devices(kind)]
    if len(devices) < replicas:
        raise RuntimeError(f"TensorFlow sees {len(devices)} {kind} device(s), the cell needs {replicas}"
                           + (" (a CPU-only TensorFlow build? install the CUDA build, or run with "
                              "--device cpu)" if kind == "GPU" else ""))
    return kind, devices


def weights_digest(model: Any) -> str:
    h = hashlib.sha256()
    for w in model.weights:
        h.update(w.numpy().tobytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class BuiltCell:
    """A cell ready to train (see :class:`harness.loops.Trainer`)."""

    strategy: Any
    model: Any
    optimizer: Any
    trainer: Trainer
    startup_s: float


def build_cell(cell: Cell, devices: list[str], seed: int = 0, mnist_path: str | None = None,
               strategy: Any = None) -> BuiltCell:
    """Strategy (unless given), model and optimizer (in scope), input pipeline and training loop."""
    import keras

    keras.mixed_precision.set_dtype_policy(cell.precision)
    keras.utils.set_random_seed(seed)
    t0 = time.perf_counter()
    strategy = strategy or make_strategy(cell, devices)
    with strategy.scope():
        model = MODELS[cell.model].build()
        optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
        if cell.precision == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        # Build now: a loss-scale optimizer traced unbuilt bakes its initial scale into the graph.
        optimizer.build(model.trainable_variables)
    def input_fn(examples: int) -> Any:
        return make_dataset(cell.data, examples, seed, mnist_path)

    trainer = LOOPS[cell.loop](strategy, model, optimizer, input_fn, cell)
    return BuiltCell(strategy, model, optimizer, trainer, time.perf_counter() - t0)


def run_cell(cell: Cell, protocol: Protocol, devices: list[str], device_type: str,
             peak: Callable[[str], float | None], mnist_path: str | None = None,
             strategy: Any = None, hosts: int = 1, ready: Callable[[], None] = lambda: None
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Build, time and check one cell in this process. Returns (row columns, window rows).

    ``hosts``: distinct machines the cell's workers run on (CPU devices count one per host);
    ``ready``: called after the first call (co-tenants' barrier)."""
    import keras

    from harness import integrity

    built = build_cell(cell, devices, protocol.seed, mnist_path, strategy)
    # energy only where this process drives every device of the cell
    meter = energy_meter() if device_type == "GPU" and cell.processes == 1 else (lambda: None)
    joules_before = meter()
    timings = measure(built.trainer.run, built.trainer.windows, cell.steps_per_execution, protocol,
                      time.perf_counter, built.trainer.agree, ready)
    problems = integrity.check(built.strategy, cell.strategy, built.model, built.optimizer,
                               cell.replicas_in_sync, timings.final_loss, built.trainer.updates[0])
    joules_after = meter()
    joules = (None if joules_before is None or joules_after is None
              else (joules_after - joules_before) / (built.trainer.updates[0] * cell.effective_batch))
    iterations = int(built.optimizer.iterations.numpy())
    keras.mixed_precision.set_dtype_policy("float32")

    reductions = built.trainer.counter.per_update(cell.accum_steps)
    examples = timings.window_steps * cell.effective_batch
    rates = metrics.window_throughputs(timings.window_seconds, examples)
    median = metrics.median(rates)
    lo, hi = metrics.bootstrap_ci(rates)
    logical = device_type == "CPU" and cell.devices > hosts  # local workers share the host CPU too
    device_count = hosts if device_type == "CPU" else cell.devices
    skip = protocol.warmup_windows
    own = [w[skip:] for w in built.trainer.per_worker] or [list(timings.window_seconds)]
    counts = [w[skip:] for w in built.trainer.updates_by_worker]
    problems += integrity.idle_workers(counts)
    one_device_peak = peak(COMPUTE_DTYPE[cell.precision])
    peak_flops = None if one_device_peak is None else one_device_peak * device_count
    flops = MODELS[cell.model].flops_per_example
    row = {
        "status": "invalid" if problems else "ok", "reason": "; ".join(problems),
        "effective_cross_device_ops": effective_cross_device_ops(built.strategy),
        "examples_per_sec": median, "examples_per_sec_ci_low": lo, "examples_per_sec_ci_high": hi,
        "cv": metrics.cv(rates), "window_steps": timings.window_steps, "startup_s": built.startup_s,
        "compile_s": timings.compile_s, "peak_flops_per_sec": peak_flops,
        "mfu": None if peak_flops is None else metrics.mfu(median, flops, peak_flops),
        "final_loss": timings.final_loss,
        "optimizer_updates_per_sec": median / cell.effective_batch,
        "allreduces_per_update": reductions,
        "allreduces_per_example": None if reductions is None else reductions / cell.effective_batch,
        "weights_digest": weights_digest(built.model), "device_count": device_count,
        "logical_devices": logical, "hosts": hosts,
        "straggler_ratio": metrics.update_imbalance(counts) if counts else metrics.straggler_ratio(own),
        "updates_run": built.trainer.updates[0], "optimizer_iterations": iterations,
        "energy_j_per_example": joules,
    }
    row.update(alone_columns(row))
    if problems:  # an invalid cell never reports a throughput
        for k in ("examples_per_sec", "examples_per_sec_ci_low", "examples_per_sec_ci_high", "mfu",
                  "optimizer_updates_per_sec"):
            row[k] = None
    if counts:  # parameter server: the coordinator's windows, split by the updates each worker ran
        windows = [{"cell_id": cell.id, "worker": w, "repeat": i, "window_steps": timings.window_steps,
                    "window_s": s, "worker_s": None, "worker_updates": counts[w][i],
                    "examples": examples, "examples_per_sec": r}
                   for w in range(len(counts))
                   for i, (s, r) in enumerate(zip(timings.window_seconds, rates))]
        return row, windows
    windows = [{"cell_id": cell.id, "worker": w, "repeat": i, "window_steps": timings.window_steps,
                "window_s": s, "worker_s": own[w][i], "examples": examples, "examples_per_sec": r}
               for w in range(len(own))
               for i, (s, r) in enumerate(zip(timings.window_seconds, rates))]
    return row, windows


def verify_cell(cell: Cell, updates: int, seed: int, devices: list[str], weights_dir: str,
                mnist_path: str | None = None, strategy: Any = None, save: bool = True
                ) -> dict[str, Any]:
    """Train ``updates`` optimizer updates from ``seed`` and check integrity; save the weights before
    and after to ``weights_dir/<hash of cell id>.npz`` (arrays before_i, after_i)."""
    import numpy as np

    from harness import integrity

    built = build_cell(cell, devices, seed, mnist_path, strategy)
    before = [w.numpy() for w in built.model.weights]
    loss = built.trainer.run(updates)
    problems = integrity.check(built.strategy, cell.strategy, built.model, built.optimizer,
                               cell.replicas_in_sync, loss, built.trainer.updates[0])
    path = os.path.join(weights_dir, hashlib.sha256(cell.id.encode()).hexdigest()[:16] + ".npz")
    if save:  # (in a multi-worker cell only the chief writes)
        np.savez(path, **{f"before_{i}": w for i, w in enumerate(before)},
                 **{f"after_{i}": w.numpy() for i, w in enumerate(built.model.weights)})
    return {"status": "invalid" if problems else "ok", "reason": "; ".join(problems),
            "final_loss": loss, "weights_digest": weights_digest(built.model), "weights_path": path,
            "effective_cross_device_ops": effective_cross_device_ops(built.strategy)}


def summarize_error(e: BaseException, limit: int = ERROR_TAIL_CHARS) -> str:
    """``Type: message`` without TensorFlow's "Detected at node ... defined at" stack dumps."""
    text = getattr(e, "message", None) or str(e)
    kept = [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith(("File ", "Detected at node"))]
    summary = " ".join(dict.fromkeys(kept))  # TF repeats the same lines per replica
    return f"{type(e).__name__}: {summary}"[:limit]


TENANT_BARRIER_ENV = "HARNESS_TENANT_BARRIER"
"""Folder of the co-tenants' start barrier, set by the launcher for cells with tenants > 1."""


def tenant_barrier(folder: str | None, index: int, tenants: int, timeout_s: float
                   ) -> Callable[[], None]:
    """A barrier for the ``tenants`` processes of a co-tenant cell: each writes ``ready-<index>``
    into ``folder`` and waits until all have; RuntimeError naming the absent ones after
    ``timeout_s``. A no-op without a folder or with one tenant."""
    if not folder or tenants <= 1:
        return lambda: None

    def wait() -> None:
        Path(folder, f"ready-{index}").touch()
        deadline = time.monotonic() + timeout_s
        while True:
            absent = [i for i in range(tenants) if not Path(folder, f"ready-{i}").exists()]
            if not absent:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"co-tenant barrier: tenant(s) {absent} not ready after "
                                   f"{timeout_s:g} s")
            time.sleep(0.01)
    return wait


def _emit(stream: TextIO, event: dict[str, Any]) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def _misbehave(kind: str) -> None:
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "stop":  # frozen, every thread included (TensorFlow's gRPC server too)
        os.kill(os.getpid(), signal.SIGSTOP)
    if kind == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like a worker stuck in a collective
        while True:
            time.sleep(1)


def _inject(fault: str | None, cell: Cell, worker: int, point: str) -> None:
    """Test hook: ``KIND:<cell_id>`` misbehaves when the cell starts; ``KIND@N:<cell_id>`` makes
    task N misbehave once it has joined the cluster, ``KIND@N+S:<cell_id>`` S seconds after that.
    KIND: kill (SIGKILL), hang (ignore SIGTERM, block the main thread), stop (SIGSTOP)."""
    if not fault:
        return
    kind, _, target = fault.partition(":")
    kind, _, at = kind.partition("@")
    at, _, delay = at.partition("+")
    if target != cell.id or (point, worker) != (("joined", int(at)) if at else ("start", worker)):
        return
    if delay:
        threading.Timer(float(delay), _misbehave, (kind,)).start()
    else:
        _misbehave(kind)


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
