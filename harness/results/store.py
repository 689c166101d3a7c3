"""The only writer of ``results/``: the schema, atomic append, and reading back.

Layout (append-only; nightly runs accumulate side by side)::

    results/cells/<YYYY-MM-DD>/<run_id>/<seq>.parquet     one row per cell, written when its passes end
    results/windows/<YYYY-MM-DD>/<run_id>/<seq>.parquet   the timed windows of one process, written
                                                          as soon as it reports
    results/collectives/<YYYY-MM-DD>/<run_id>/<seq>.parquet  one row per all-reduce measured by
                                                          ``--sweep collectives``
    results/logs/<YYYY-MM-DD>/<run_id>/worker-<n>.log     worker stderr

Each file is written to a temporary name in the same folder and renamed into place, so a reader or an
interrupted run never sees half a file. Every file carries the full schema below, so
``pandas.read_parquet("results/cells")`` reads all runs at once; :func:`read_cells` does the same with
the schema applied (columns added in later versions read as null in older files).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq


@dataclass(frozen=True)
class Column:
    """One documented column: arrow type, unit ("" for none) and meaning."""

    name: str
    type: pa.DataType
    unit: str
    doc: str


S, I, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

CELL_COLUMNS: tuple[Column, ...] = (
    # identity
    Column("run_id", S, "", "Id of the `python -m harness run` invocation (UTC start time + random suffix)."),
    Column("timestamp", S, "ISO 8601 UTC", "When the row was written."),
    Column("suite_version", S, "", "harness version and git commit of the suite that measured."),
    Column("ab_id", S, "", "`python -m harness ab`: the comparison this row belongs to (also its run_id); null for other runs."),
    Column("ab_side", S, "", "`ab`: A or B, the interpreter and settings this process ran under (its fingerprint, tf_version, env say which)."),
    Column("ab_pair", I, "", "`ab`: 0-based pair index; the pair's A and B processes ran at once (duet) or back to back (alternate), in a random order."),
    Column("ab_mode", S, "", "`ab`: duet (the pair's processes ran at once, both pinned to the same CPUs, timing together after a barrier) or alternate (one after the other, each with the whole host)."),
    Column("ab_cpus", S, "", "`ab` duet: the host CPUs this process and its partner were pinned to, e.g. \"0,1\" (null: not pinned)."),
    Column("cell_id", S, "", "Stable id of the cell: model/strategy[option]/rRwW[pP][tT]/bB/accK/loop/speS/precision/data/scaling (pP: ps tasks, parameter_server only; tT: co-tenant processes, more than one only; gbB instead of bB for strong scaling)."),
    # the cell
    Column("model", S, "", "cnn (Conv32-Pool-Conv64-Pool-Flatten-Dense10) or dense (784-128-10)."),
    Column("data", S, "", "synthetic (fixed-seed pool, pre-batched, repeated) or mnist (the real training split)."),
    Column("strategy", S, "", "default, one_device, mirrored, central_storage, multi_worker_mirrored or parameter_server."),
    Column("cross_device_ops", S, "", "Requested all-reduce for mirrored (auto, nccl, hierarchical_copy, reduction_to_one_device); none elsewhere."),
    Column("communication", S, "", "Requested collective implementation for multi_worker_mirrored (auto, ring, nccl); none elsewhere."),
    Column("effective_cross_device_ops", S, "", "What the strategy object really used, e.g. CollectiveAllReduce(RING); none for strategies without one."),
    Column("nccl_transport", S, "", "GPU cells: the transports NCCL chose for this process's connections, from its INFO log (P2P/CUMEM, P2P/IPC, SHM, NET/Socket, NET/IB; comma-separated); null where NCCL was not used or the user set NCCL_DEBUG."),
    Column("replicas", I, "devices", "Replicas per worker."),
    Column("workers", I, "processes", "Worker processes (each a TF_CONFIG task; parameter_server: besides the coordinator and the ps tasks)."),
    Column("ps", I, "processes", "Parameter-server tasks holding the variables (parameter_server; 0 elsewhere)."),
    Column("tenants", I, "processes", "Independent training processes of this cell run at once on the same devices (co-tenancy; 1 = alone). With more than one, examples_per_sec is their aggregate."),
    Column("per_replica_batch", I, "examples", "Examples per replica per micro-step."),
    Column("global_batch", I, "examples", "Examples per micro-step over all replicas and workers = per_replica_batch x replicas x workers (parameter_server: one update on every worker)."),
    Column("accum_steps", I, "micro-batches", "Micro-batches per optimizer update: each replica sums their gradients locally, then one cross-replica reduction and one optimizer step."),
    Column("effective_batch", I, "examples", "Examples per optimizer update = per_replica_batch x replicas x workers x accum_steps; parameter_server, where each worker updates on its own: per_replica_batch x replicas x accum_steps."),
    Column("loop", S, "", "ctl: strategy.run inside one tf.function holding an in-graph loop of steps_per_execution updates; fit: Keras model.fit(steps_per_execution=...) with the suite's train step (same update as ctl)."),
    Column("steps_per_execution", I, "updates", "Optimizer updates per tf.function call (per train_function call in fit)."),
    Column("precision", S, "", "Keras dtype policy: float32, mixed_bfloat16 or mixed_float16."),
    Column("scaling", S, "", "weak (per-replica batch fixed) or strong (global batch fixed); decides the efficiency baseline."),
    Column("jit_compile", B, "", "Whether the training function was XLA-compiled (always false so far)."),
    Column("optimizer", S, "", "Optimizer and its settings."),
    Column("learning_rate", F, "", "Optimizer learning rate."),
    # outcome
    Column("status", S, "", "ok (measured and checked), unsupported (TensorFlow cannot run it correctly here), failed (crashed or timed out), invalid (ran, but an integrity check failed)."),
    Column("reason", S, "", "Why the row is not ok (empty when ok)."),
    # measurement
    Column("examples_per_sec", F, "examples/s", "Median over the cell's processes of each process's figure (the median over its timed windows of window_steps x effective_batch / window_seconds: global examples count every replica, worker and micro-batch)."),
    Column("examples_per_sec_ci_low", F, "examples/s", "Lower end of the 95% CI of the figure: exp(c - h), c = mean(log x_p) over the process figures x_p, h = t(0.975, P-1) x sd(log x_p) / sqrt(P) (between- and within-process noise of this run). With ci_history_runs = k > 0, h = max(that, t(0.975, k) x sd(log r_j)), r_j this run's and the k newest earlier runs' figures of the cell on the same fingerprint: it then also covers run-to-run drift. Null with fewer than 2 processes and no history."),
    Column("examples_per_sec_ci_high", F, "examples/s", "Upper end of the same CI."),
    Column("ci_history_runs", I, "runs", "Earlier runs of the cell (same fingerprint, newest 10, status ok) whose figures widened the CI to cover run-to-run drift; 0 when there were fewer than 2: the CI then covers this run's processes only, and a re-run on a noisy machine can fall outside it."),
    Column("processes", I, "processes", "Independent measurements behind the figure: the cell ran once per pass, each time in fresh worker processes, passes interleaved over the run (each pass a new order of the cells)."),
    Column("process_examples_per_sec", pa.list_(F), "examples/s", "Each process's figure, in pass order (what the CI and every ratio's CI are computed from)."),
    Column("cv_between_processes", F, "1", "Sample std / mean of the process figures (the noise between processes of this run)."),
    Column("cv_within_process", F, "1", "Median over processes of the sample std / mean of one process's window throughputs (the noise inside one process)."),
    Column("unstable", B, "", "True when cv_between_processes still exceeded the run's threshold (unstable_cv) after the most passes allowed (max_processes): its processes disagree by more than the run accepts."),
    Column("min_processes", I, "processes", "Passes every runnable cell gets (the protocol's processes)."),
    Column("max_processes", I, "processes", "Most passes a cell gets when its processes disagree (adaptive repeats)."),
    Column("wall_s", F, "s", "Wall time of all the cell's processes, from launch to exit, summed over passes (start-up, compile, calibration, windows and checks)."),
    Column("window_steps", I, "updates", "Optimizer updates per timed window, calibrated so a window lasts about window_target_s."),
    Column("window_target_s", F, "s", "Target length of a timed window."),
    Column("repeats", I, "windows", "Timed windows per process (all raw times are in results/windows)."),
    Column("warmup_windows", I, "windows", "Untimed windows run after the first call and before timing."),
    Column("startup_s", F, "s", "Building strategy, model, optimizer and input pipeline; not in throughput."),
    Column("compile_s", F, "s", "First tf.function call: tracing, graph optimisation and its first steps_per_execution steps; not in throughput."),
    Column("scaling_efficiency", F, "1", "examples_per_sec / (replicas x workers x baseline examples_per_sec); baseline: the 1-device cell of the same configuration in the same run (same per-replica batch for weak, same global batch for strong)."),
    Column("scaling_efficiency_ci_low", F, "1", "Lower end of its 95% CI: Welch's t on the log process figures of the cell and of its baseline, divided by replicas x workers."),
    Column("scaling_efficiency_ci_high", F, "1", "Upper end of the same CI."),
    Column("baseline_cell_id", S, "", "cell_id of that baseline (empty when none was measured in the run)."),
    Column("flops_per_example", I, "FLOP", "Analytic training FLOPs per example: forward + weight gradients + input gradients (none for the first layer) of convolutions and matmuls, 2 FLOPs per multiply-add."),
    Column("optimizer_updates_per_sec", F, "updates/s", "examples_per_sec / effective_batch."),
    Column("allreduces_per_update", F, "reductions", "Cross-replica reductions per optimizer update, counted: every top-level reduce/batch_reduce call of the strategy's cross-device ops traced into the training function: the gradients' (micro-batch phase x accum_steps + apply phase), plus, in the ctl loop, the loss's, one per call of steps_per_execution updates (so 1 + 1/steps_per_execution on several replicas without accumulation). Keras fit's own handling of its logs is not counted. 0 where none is made: one device (default, one_device, or mirrored with one replica, whose reduce TensorFlow skips)."),
    Column("allreduces_per_example", F, "reductions/example", "allreduces_per_update / effective_batch."),
    Column("straggler_ratio", F, "1", "Median over processes of: parameter_server (asynchronous), the busiest worker's updates over the idlest's in the timed windows (inf: a worker ran none; a slow worker runs fewer); co-tenants, the fastest tenant's throughput over the slowest's; 1.0 for one process. Null for synchronous multi-worker cells (multi_worker_mirrored): every worker's window ends at the same all-reduce, so a slow worker cannot show in its own time."),
    Column("updates_run", I, "updates", "Optimizer updates the loop ran in the cell (first call, calibration, warm-up and timed windows), counted by the caller of the training function (the coordinator under parameter_server)."),
    Column("optimizer_iterations", I, "updates", "optimizer.iterations at the end of the cell: equal to updates_run (checked) for synchronous strategies; lower under parameter_server, where Keras 3 increments it by a read then an assign on the ps and concurrent workers lose increments (the weight updates themselves are atomic assign_sub ops)."),
    Column("cores_per_worker", I, "cores", "Cores each worker (and ps task) was given: TF_NUM_INTRAOP_THREADS and OMP_NUM_THREADS = host_cores // (workers + ps) for local multi-worker cells; the whole host otherwise."),
    Column("oversubscribed", B, "", "True when cores_per_worker x (workers + ps) exceeds host_cores, or for co-tenant cells (each tenant gets every core) and `ab` duets (both sides share their CPUs): the figure was measured on shared cores (the parameter-server coordinator is not counted)."),
    Column("hosts", I, "machines", "Distinct machines the workers ran on (1 for local processes)."),
    Column("tenant_examples_per_sec_min", F, "examples/s", "Co-tenancy: the slowest tenant's throughput over the span where every tenant was timing, median over processes (equals examples_per_sec with one tenant)."),
    Column("tenant_examples_per_sec_max", F, "examples/s", "Co-tenancy: the fastest tenant's throughput over that span, median over processes."),
    Column("tenant_share_min", F, "1", "Co-tenancy: the slowest tenant's throughput / the aggregate (1/tenants is a fair split; 1.0 with one tenant). The aggregate examples_per_sec of a co-tenant process is the sum of each tenant's examples / seconds over its windows wholly inside the span where every tenant was timing."),
    Column("cotenancy_ratio", F, "1", "Aggregate examples_per_sec with this many tenants / examples_per_sec of the same cell alone (tenants 1) in the same run: 1.0 means sharing the devices costs nothing in aggregate; per tenant it is cotenancy_ratio / tenants. Null with one tenant or without that row."),
    Column("cotenancy_ratio_ci_low", F, "1", "Lower end of its 95% CI (Welch's t on the log process figures of both cells)."),
    Column("cotenancy_ratio_ci_high", F, "1", "Upper end of the same CI."),
    Column("peak_flops_per_sec", F, "FLOP/s", "The run's matmul peak for this cell: the median over the run's peak processes (own processes, at the start, between passes and at the end) of each one's best rate of distinct n x n matmuls (n=1024 on CPU, 8192 on GPU) in peak_dtype on one device, scaled to what the cell ran on: x device_count on GPUs, x peak_cores / host_cores on CPU."),
    Column("peak_flops_per_sec_ci_low", F, "FLOP/s", "Lower end of the 95% CI of that peak over the peak processes (same log-t interval and scaling)."),
    Column("peak_flops_per_sec_ci_high", F, "FLOP/s", "Upper end of the same CI."),
    Column("peak_dtype", S, "", "Compute dtype of the peak used for mfu: the cell's (float32, bfloat16 or float16); float32 on GPUs runs as TF32 when build_info says tensor_float_32."),
    Column("peak_cores", I, "cores", "CPU cores the cell's processes had in all (cores_per_worker x processes, at most host_cores) that the CPU peak is scaled to; null on GPUs."),
    Column("mfu", F, "1", "examples_per_sec x flops_per_example / peak_flops_per_sec: within a run, rows of one dtype and core count share one peak, so their mfu differ exactly by their throughput ratio."),
    Column("energy_j_per_example", F, "J/example", "GPU energy per example, median over processes: NVML total-energy counters of the GPUs the process uses (not every GPU of the machine) over the metered span (first call, calibration, warm-up and timed windows) / the examples trained in it; co-tenants (who meter the same GPUs): their mean power / their aggregate examples_per_sec. Null on CPU, for multi-worker cells and without NVML."),
    Column("gpu_watts", F, "W", "Mean GPU power over the metered span (joules / seconds), median over processes; co-tenants: the mean of the tenants' readings."),
    Column("final_loss", F, "", "Loss of the last optimizer update of the last timed window (mean over the update's effective batch)."),
    Column("weights_digest", S, "", "SHA-256 (first 16 hex digits) of all model weights' bytes after the run; equal digests mean bitwise-equal weights."),
    # why: where an update's time goes (measured in the same process after the timed windows)
    Column("step_s", F, "s/update", "Time per optimizer update = effective_batch / examples_per_sec."),
    Column("compute_s", F, "s/update", "The update's forward and backward passes (every micro-batch, every replica) with no cross-replica reduction and no input pipeline (the batch already on the device), median over the processes that measured it; null where it cannot be isolated (parameter_server)."),
    Column("allreduce_s", F, "s/update", "One cross-replica all-reduce of the model's gradient set (same shapes, dtype and cross-device ops as the optimizer's), alone, per update; 0 with one device (no reduction); null for parameter_server (no all-reduce: variables live on the ps tasks)."),
    Column("input_s", F, "s/update", "The input pipeline alone: pulling one update's micro-batches through the same distributed iterator, per update."),
    Column("dispatch_s", F, "s/update", "Host dispatch: one call of an empty function under the same strategy (strategy.run of a constant), divided by steps_per_execution."),
    Column("overlap", F, "1", "(compute_s + allreduce_s + input_s + dispatch_s - step_s) / step_s: > 0 when parts overlap (e.g. input prefetched during compute), < 0 when the step holds time no part explains (the remainder: optimizer arithmetic, synchronisation, contention)."),
    Column("bound", S, "", "compute, communication, input or dispatch: the part with the largest share of step_s (harness.analysis.breakdown); null when the parts are not measured."),
    Column("bound_reason", S, "", "The figures behind bound and the knob that would help (e.g. accumulation steps or another cross-device op when communication-bound, steps_per_execution when dispatch-bound)."),
    # where
    Column("device_kind", S, "", "GPU or CPU."),
    Column("device_name", S, "", "GPU model, or CPU model for CPU runs."),
    Column("device_count", I, "devices", "Physical devices the replicas ran on: GPUs, or for CPU cells one per host (logical CPU devices and local workers share one CPU)."),
    Column("logical_devices", B, "", "True when several replicas share one host's CPU (logical CPU devices, or local worker processes): extra replicas add no compute."),
    Column("host_cpu", S, "", "CPU model name."),
    Column("host_cores", I, "cores", "Logical cores the OS reports."),
    Column("intra_op_threads", I, "threads", "Threads of TensorFlow's intra-op pool: its tf.config setting, else TF_NUM_INTRAOP_THREADS (local workers split the cores so), else one per CPU the process may run on (its affinity)."),
    Column("inter_op_threads", I, "threads", "tf.config.threading inter-op setting (0 = default)."),
    Column("tf_version", S, "", "TensorFlow version."),
    Column("keras_version", S, "", "Keras version."),
    Column("python_version", S, "", "Python version."),
    Column("build_info", S, "JSON", "CUDA/cuDNN/ROCm versions TensorFlow was built with, the NVIDIA driver, and whether float32 matmuls run as TF32 on this GPU (tensor_float_32: TensorFlow allows it, NVIDIA_TF32_OVERRIDE is not 0 and the GPU has compute capability >= 8.0; then the float32 peak and mfu are against TF32). NVIDIA_TF32_OVERRIDE itself is in env."),
    Column("env", S, "JSON", "TF_*, NCCL_*, OMP_*, KMP_*, CUDA/HIP_VISIBLE_DEVICES, XLA_FLAGS and NVIDIA_TF32_OVERRIDE of the worker."),
    Column("fingerprint", S, "", "Hash of the stable hardware and software facts above: rows with equal fingerprints are comparable over time."),
)

WINDOW_COLUMNS: tuple[Column, ...] = (
    Column("run_id", S, "", "As in the cells table."),
    Column("cell_id", S, "", "As in the cells table."),
    Column("worker", I, "", "Worker index (0 for single-process strategies; one row per worker and window otherwise); for co-tenant cells the tenant index, each tenant's own windows (every window is kept; the aggregate uses those inside the tenants' common span)."),
    Column("pass", I, "", "0-based pass of the run in which this window's process ran (a cell runs once per pass, so the pass identifies its process); for `ab` rows, the pair index."),
    Column("ab_side", S, "", "`ab`: A or B, the side whose process timed this window (null for other runs)."),
    Column("repeat", I, "", "0-based index of the timed window within its process."),
    Column("window_steps", I, "updates", "Optimizer updates in the window."),
    Column("start_s", F, "s", "Start of the window on the host's monotonic clock (comparable between processes of one host, not between hosts or boots)."),
    Column("window_s", F, "s", "Wall time of the window: from the previous host sync to this window's host sync (single process), or between the cross-worker barriers around it (multi-worker: the same for every worker)."),
    Column("worker_s", F, "s", "This worker's own time in the window: from the start barrier to its own host sync (equals window_s in a single process; null under parameter_server)."),
    Column("worker_updates", I, "updates", "parameter_server: the updates this worker ran in the window (they sum to window_steps); null elsewhere."),
    Column("examples", I, "examples", "Global examples processed in the window (all replicas, workers and micro-batches)."),
    Column("examples_per_sec", F, "examples/s", "examples / window_s."),
)


COLLECTIVE_COLUMNS: tuple[Column, ...] = (
    Column("run_id", S, "", "Id of the run."),
    Column("timestamp", S, "ISO 8601 UTC", "When the row was written."),
    Column("suite_version", S, "", "harness version and git commit of the suite that measured."),
    Column("fingerprint", S, "", "Hardware/software fingerprint (as in cells)."),
    Column("device_kind", S, "", "GPU or CPU."),
    Column("device_name", S, "", "GPU model, or CPU model."),
    Column("host_cores", I, "cores", "Logical cores the OS reports."),
    Column("tf_version", S, "", "TensorFlow version."),
    Column("status", S, "", "ok (measured, sum checked), unsupported, failed or invalid (the all-reduce returned a wrong sum)."),
    Column("reason", S, "", "Why the row is not ok (empty when ok)."),
    Column("strategy", S, "", "mirrored (cross-device ops across the replicas of one process) or multi_worker_mirrored (collectives across worker processes)."),
    Column("op", S, "", "Requested cross_device_ops (mirrored: auto, nccl, hierarchical_copy, reduction_to_one_device) or communication (multi_worker_mirrored: auto, ring, nccl)."),
    Column("effective_op", S, "", "What the strategy object really used, e.g. CollectiveAllReduce(RING)."),
    Column("replicas", I, "devices", "Replicas per worker."),
    Column("workers", I, "processes", "Worker processes."),
    Column("devices", I, "devices", "n = replicas x workers, the all-reduce's participants."),
    Column("payload", S, "", "bytes (one float32 tensor of the row's size, the size sweep) or a model's gradient set (cnn, dense: one tensor per trainable variable, as the optimizer hands them over)."),
    Column("tensors", I, "tensors", "Tensors reduced in one all-reduce call."),
    Column("bytes", I, "bytes", "Bytes each participant contributes to one all-reduce (the nccl-tests size)."),
    Column("time_s", F, "s", "Median over processes of each process's median time of one all-reduce (timed in-graph loops of calls, each window ending with a host sync)."),
    Column("time_s_ci_low", F, "s", "Lower end of the 95% CI of time_s over processes (log-scale Student t, as examples_per_sec)."),
    Column("time_s_ci_high", F, "s", "Upper end of the same CI."),
    Column("processes", I, "processes", "Independent processes behind time_s."),
    Column("process_time_s", pa.list_(F), "s", "Each process's figure, in pass order."),
    Column("algbw_gbps", F, "GB/s", "bytes / time_s / 1e9 (nccl-tests algorithm bandwidth)."),
    Column("busbw_gbps", F, "GB/s", "algbw_gbps x 2(n-1)/n (nccl-tests bus bandwidth of an all-reduce: comparable with the link's bandwidth whatever n)."),
    Column("calls", I, "all-reduces", "All-reduce calls per timed window."),
    Column("max_rel_error", F, "1", "Worst |result - expected| / expected over the checked elements (participant k contributes k + 1, so the sum is n(n+1)/2)."),
)


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type) for c in columns])


CELL_SCHEMA = arrow_schema(CELL_COLUMNS)

WINDOW_SCHEMA = arrow_schema(WINDOW_COLUMNS)

COLLECTIVE_SCHEMA = arrow_schema(COLLECTIVE_COLUMNS)


def _table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    unknown = {k for r in rows for k in r} - set(schema.names)
    if unknown:
        raise KeyError(f"columns not in the documented schema: {sorted(unknown)}")
    return pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows], schema=schema)


def write_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` via a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are for everyone who can read the folder
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class RunFiles:
    """Where one run's files go under a results root."""

    root: Path
    date: str
    run_id: str

    def folder(self, table: str) -> Path:
        return self.root / table / self.date / self.run_id

    def write(self, seq: int, row: Mapping[str, Any], windows: Sequence[Mapping[str, Any]]) -> Path:
        """Append one cell's row (and its windows) as file number ``seq``; returns the row's path."""
        self.write_windows(seq, windows)
        return self.write_row(seq, row)

    def write_windows(self, seq: int, windows: Sequence[Mapping[str, Any]]) -> Path | None:
        """Append one process's window rows as windows file number ``seq`` (none: nothing)."""
        if not windows:
            return None
        path = self.folder("windows") / f"{seq:05d}.parquet"
        write_atomic(_table(windows, WINDOW_SCHEMA), path)
        return path

    def write_collective(self, seq: int, row: Mapping[str, Any]) -> Path:
        """Append one collectives row as collectives file number ``seq``."""
        path = self.folder("collectives") / f"{seq:05d}.parquet"
        write_atomic(_table([row], COLLECTIVE_SCHEMA), path)
        return path

    def write_row(self, seq: int, row: Mapping[str, Any]) -> Path:
        """Append one cell's row as cells file number ``seq``."""
        path = self.folder("cells") / f"{seq:05d}.parquet"
        write_atomic(_table([row], CELL_SCHEMA), path)
        return path


_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(), pa.string(): pd.StringDtype()}
"""Integers and booleans stay integers and booleans when some rows hold nulls."""


def _read(root: Path, schema: pa.Schema) -> Any:
    files = sorted(p for p in root.rglob("*.parquet") if not p.name.startswith("."))
    if not files:
        return schema.empty_table().to_pandas(types_mapper=_NULLABLE.get)
    table = ds.dataset([str(f) for f in files], schema=schema, format="parquet").to_table()
    return table.to_pandas(types_mapper=_NULLABLE.get)


def read_cells(results: str | Path) -> Any:
    """Every cell row under ``results/cells`` as a pandas DataFrame (documented schema)."""
    return _read(Path(results) / "cells", CELL_SCHEMA)


def read_windows(results: str | Path) -> Any:
    """Every window row under ``results/windows`` as a pandas DataFrame."""
    return _read(Path(results) / "windows", WINDOW_SCHEMA)


def read_collectives(results: str | Path) -> Any:
    """Every collectives row under ``results/collectives`` as a pandas DataFrame."""
    return _read(Path(results) / "collectives", COLLECTIVE_SCHEMA)


def schema_markdown() -> str:
    """The column tables of results/README.md, generated from the schema above."""
    out = []
    for title, cols in (("cells", CELL_COLUMNS), ("windows", WINDOW_COLUMNS),
                        ("collectives", COLLECTIVE_COLUMNS)):
        out.append(f"### `{title}` table\n\n| column | type | unit | meaning |\n|---|---|---|---|")
        out.extend(f"| `{c.name}` | {c.type} | {c.unit} | {c.doc} |" for c in cols)
        out.append("")
    return "\n".join(out)


README_MARKER = "## Columns\n"


def update_readme(path: str | Path) -> None:
    """Rewrite the column tables of results/README.md (everything after README_MARKER)."""
    p = Path(path)
    head = p.read_text().split(README_MARKER)[0]
    p.write_text(head + README_MARKER + "\n" + schema_markdown())


if __name__ == "__main__":  # python -m harness.results.store results/README.md
    import sys

    update_readme(sys.argv[1])
