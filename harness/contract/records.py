"""The typed records that cross the process boundary and land in ``results/``: one row of each
table, and :class:`Status`.

This module is the schema's one definition: each column's ``Annotated`` metadata (:class:`Col`)
gives its unit and meaning. A cell row (:class:`CellRow`) is a frozen dataclass of typed groups
(the cell's axes, its figure as an :class:`Estimate`, the process spread, FLOPs, the peak and MFU,
the breakdown, the co-tenant sides, the machine); :mod:`harness.contract.columns` is the one
mapping between such a record and its flat columns, from which :mod:`harness.results.store`
derives the parquet schema and ``results/README.md``. Adding a column is one field of a group
here. :class:`RatioRow` and :class:`NightlyRow` are typed the same way (a ratio and its CI: an
:class:`Estimate`); the windows, collectives and costs tables' rows are flat TypedDicts (every
field may be absent while a row is assembled). Fields typed without ``| None`` are set in every
stored row of that table. Pure: no pyarrow, no pandas.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, TypedDict

from harness.contract.columns import CI, Col, Estimate
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.groups import Relation


def _axis(name: str) -> Col:
    """A cell axis's column: its unit and description from its descriptor (:mod:`harness.spec.axes`)."""
    axis = AXIS_BY_NAME[name]
    return Col(axis.unit, axis.column_doc)


class Status(StrEnum):
    """What became of a cell (or a collectives topology)."""

    OK = "ok"
    """Measured and checked."""
    UNSUPPORTED = "unsupported"
    """TensorFlow cannot run it correctly here (a rule of :mod:`harness.spec.rules`, with the reason)."""
    FAILED = "failed"
    """Crashed or timed out (the reason names the task and the phase)."""
    INVALID = "invalid"
    """Ran, but an integrity check failed: the row carries no figure of any kind."""
    NOT_MEASURED = "not measured"
    """Runnable, but the run's budget was spent before any process of it started (a run that
    stopped writes no such row: it resumes)."""


Resumes = Annotated[
    int | None,
    Col(
        "",
        "Sessions that resumed the run from its journal after it was stopped before writing its "
        "rows (`run --resume`; 0: measured in one session; null: an `ab` or an older run).",
    ),
]
"""The ``resumes`` column, which the cells, ratios and costs tables share."""


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """The run that measured the row."""

    run_id: Annotated[
        str,
        Col(
            "",
            "Id of the `python -m harness run` (or `ab`, `nightly`) invocation that measured the row "
            "(UTC start time + random suffix).",
        ),
    ] = ""
    timestamp: Annotated[str, Col("ISO 8601 UTC", "When the row was written.")] = ""
    suite_version: Annotated[str, Col("", "harness version and git commit of the suite that measured.")] = ""
    resumes: Resumes = None


@dataclass(frozen=True, kw_only=True)
class AbInfo:
    """`python -m harness ab`: which comparison, side and pair the row belongs to."""

    ab_id: Annotated[
        str | None,
        Col(
            "",
            "`python -m harness ab`: the comparison this row belongs to (also its run_id); null for "
            "other runs.",
        ),
    ] = None
    ab_side: Annotated[
        str | None,
        Col(
            "",
            "`ab`: A or B, the interpreter and settings this process ran under (its fingerprint, "
            "tf_version, env say which).",
        ),
    ] = None
    ab_pair: Annotated[
        int | None,
        Col(
            "",
            "`ab`: 0-based pair index; the pair's A and B processes ran at once (duet) or back to back "
            "(alternate), in a random order.",
        ),
    ] = None
    ab_mode: Annotated[
        str | None,
        Col(
            "",
            "`ab`: turns (the pair's processes live at once, each side's windows timed in turns "
            "with the whole machine), duet (the pair's processes ran at once, both pinned to the same "
            "CPUs, timing together after a barrier) or alternate (one after the other, each with the "
            "whole host).",
        ),
    ] = None
    ab_turn_ratio: Annotated[
        float | None,
        Col(
            "1",
            "`ab` turns: the pair's B/A, exp(mean over its blocks of log(B's throughput / A's)) in "
            "adjacent turns (the ratio the sequential rule uses; on both sides' rows). Null in the "
            "other modes, where B/A is the ratio of the two rows' examples_per_sec.",
        ),
    ] = None
    ab_cpus: Annotated[
        str | None,
        Col(
            "",
            '`ab` duet: the host CPUs this process and its partner were pinned to, e.g. "0,1" (null: '
            "not pinned).",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Axes:
    """What the cell is: its id and every axis (known before it runs)."""

    cell_id: Annotated[
        str,
        Col(
            "",
            "Stable id of the cell: "
            "model/strategy[option]/rRwW[pP][tT]/bB/accK/loop/speS/precision/data/scaling (pP: ps "
            "tasks, parameter_server only; tT: co-tenant processes, more than one only; gbB instead of "
            "bB for strong scaling).",
        ),
    ]
    model: Annotated[str, _axis("model")]
    data: Annotated[str, _axis("data")]
    strategy: Annotated[str, _axis("strategy")]
    cross_device_ops: Annotated[str, _axis("cross_device_ops")]
    communication: Annotated[str, _axis("communication")]
    replicas: Annotated[int, _axis("replicas")]
    workers: Annotated[int, _axis("workers")]
    ps: Annotated[int, _axis("ps")]
    tenants: Annotated[int, _axis("tenants")]
    per_replica_batch: Annotated[int, Col("examples", "Examples per replica per micro-step.")]
    global_batch: Annotated[
        int,
        Col(
            "examples",
            "Examples per micro-step over all replicas and workers = per_replica_batch x replicas x "
            "workers (parameter_server: one update on every worker).",
        ),
    ]
    accum_steps: Annotated[int, _axis("accum_steps")]
    effective_batch: Annotated[
        int,
        Col(
            "examples",
            "Examples per optimizer update = per_replica_batch x replicas x workers x accum_steps; "
            "parameter_server, where each worker updates on its own: per_replica_batch x replicas x "
            "accum_steps.",
        ),
    ]
    loop: Annotated[str, _axis("loop")]
    steps_per_execution: Annotated[int, _axis("steps_per_execution")]
    precision: Annotated[str, _axis("precision")]
    xla: Annotated[str, _axis("xla")]
    loss: Annotated[str | None, _axis("loss")] = None
    scaling: Annotated[str, _axis("scaling")]
    tenant_framework: Annotated[str, _axis("tenant_framework")]
    optimizer: Annotated[str, Col("", "Optimizer and its settings.")]
    learning_rate: Annotated[float, Col("", "Optimizer learning rate.")]


@dataclass(frozen=True, kw_only=True)
class Spread:
    """The processes behind the figure and how far they agree."""

    ci_history_runs: Annotated[
        int | None,
        Col(
            "runs",
            "Earlier runs of the cell (same fingerprint, newest 10, status ok) whose figures widened "
            "the CI to cover run-to-run drift; 0 when there were fewer than 2: the CI then covers this "
            "run's processes only, and a re-run on a noisy machine can fall outside it.",
        ),
    ] = None
    processes: Annotated[
        int | None,
        Col(
            "processes",
            "Independent measurements behind the figure: the cell ran once per pass, each time in fresh"
            " worker processes, passes interleaved over the run (each pass a new order of the cells).",
        ),
    ] = None
    process_examples_per_sec: Annotated[
        list[float] | None,
        Col(
            "examples/s",
            "Each process's figure, in pass order (what the CI and every ratio's CI are computed from).",
            figure=True,
        ),
    ] = None
    cv_between_processes: Annotated[
        float | None,
        Col(
            "1",
            "Sample std / mean of the process figures (the noise between processes of this run).",
            figure=True,
        ),
    ] = None
    cv_within_process: Annotated[
        float | None,
        Col(
            "1",
            "Median over processes of the sample std / mean of one process's window throughputs (the "
            "noise inside one process).",
            figure=True,
            median=True,
        ),
    ] = None
    unstable: Annotated[
        bool | None,
        Col(
            "",
            "True when cv_between_processes still exceeded the run's threshold (unstable_cv) after the "
            "most passes allowed (max_processes): its processes disagree by more than the run accepts.",
        ),
    ] = None
    min_processes: Annotated[
        int | None, Col("processes", "Passes every runnable cell gets (the protocol's processes).")
    ] = None
    max_processes: Annotated[
        int | None,
        Col("processes", "Most passes a cell gets when its processes disagree (adaptive repeats)."),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Timing:
    """How the cell was timed: windows, repeats, start-up and compile times."""

    wall_s: Annotated[
        float | None,
        Col(
            "s",
            "Wall time of all the cell's processes, from launch to exit, summed over passes (start-up, "
            "compile, calibration, windows and checks).",
        ),
    ] = None
    window_steps: Annotated[
        int | None,
        Col(
            "updates",
            "Optimizer updates per timed window, calibrated so a window lasts about window_target_s.",
        ),
    ] = None
    window_target_s: Annotated[
        float | None, Col("s", "Target length of a timed window (in turns: of a turn, --turn-s).")
    ] = None
    repeats: Annotated[
        int | None,
        Col(
            "windows",
            "Timed windows per process (in turns: 2 x blocks, its turns; all raw times are in "
            "results/windows).",
        ),
    ] = None
    warmup_windows: Annotated[
        int | None, Col("windows", "Untimed windows run after the first call and before timing.")
    ] = None
    startup_s: Annotated[
        float | None,
        Col("s", "Building strategy, model, optimizer and input pipeline; not in throughput.", median=True),
    ] = None
    compile_s: Annotated[
        float | None,
        Col(
            "s",
            "First tf.function call: tracing, graph optimisation and its first steps_per_execution "
            "steps; not in throughput.",
            median=True,
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Execution:
    """What the processes actually ran: the all-reduce chosen, XLA, devices, hosts, cores."""

    effective_cross_device_ops: Annotated[
        str | None,
        Col(
            "",
            "What the strategy object really used, e.g. CollectiveAllReduce(RING); none for strategies "
            "without one.",
        ),
    ] = None
    nccl_transport: Annotated[
        str | None,
        Col(
            "",
            "GPU cells: the transports NCCL chose for this process's connections, from its INFO log "
            "(P2P/CUMEM, P2P/IPC, SHM, NET/Socket, NET/IB; comma-separated); null where NCCL was not "
            "used or the user set NCCL_DEBUG.",
        ),
    ] = None
    forked: Annotated[
        bool | None,
        Col(
            "",
            "True: the chief's process was forked from a fork server that had imported TensorFlow and "
            "Keras but started no runtime (harness.contract.forks); False: a fresh interpreter "
            "(--no-fork, a real cluster's tasks, or no server could start).",
        ),
    ] = None
    jit_compile: Annotated[
        bool | None,
        Col(
            "",
            "Whether the training function ran XLA-compiled, as the worker reported it: for ctl and "
            "the parameter-server loop, the jit_compile of the tf.function of each update's step; for "
            "fit, the jit_compile Keras resolved and built its step function with (in both, the loop "
            "that reads the input is never compiled: XLA has no IteratorGetNext). The suite asks for "
            "the same value for both loops (false for every cell so far; never Keras's auto, which "
            "turns XLA on for a GPU model built outside any strategy scope and off inside one). Null "
            "where no process reported it (an unsupported cell; a failed process reports nothing) or "
            "the cell's processes disagree; rows from before it was reported hold false.",
        ),
    ] = None
    device_count: Annotated[
        int | None,
        Col(
            "devices",
            "Physical devices the replicas ran on: GPUs (those split into logical GPUs counted once), "
            "or for CPU cells one per host (logical CPU devices and local workers share one CPU).",
        ),
    ] = None
    logical_devices: Annotated[
        bool | None,
        Col(
            "",
            "True when several replicas share one device: one host's CPU (logical CPU devices, or "
            "local worker processes), or a GPU split into logical GPUs (--replicas above the GPU "
            "count); extra replicas add no compute.",
        ),
    ] = None
    hosts: Annotated[
        int | None, Col("machines", "Distinct machines the workers ran on (1 for local processes).")
    ] = None
    cores_per_worker: Annotated[
        int | None,
        Col(
            "cores",
            "Cores each worker (and ps task) was given: TF_NUM_INTRAOP_THREADS and OMP_NUM_THREADS = "
            "host_cores // (workers + ps) for local multi-worker cells; the whole host otherwise.",
        ),
    ] = None
    oversubscribed: Annotated[
        bool | None,
        Col(
            "",
            "True when cores_per_worker x (workers + ps) exceeds host_cores, or for co-tenant cells "
            "(each tenant gets every core) and `ab` duets (both sides share their CPUs): the figure was"
            " measured on shared cores (the parameter-server coordinator is not counted).",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Efficiency:
    """Scaling efficiency against the 1-device baseline."""

    scaling_efficiency: Annotated[
        Estimate,
        Col(
            "1",
            "examples_per_sec / (replicas x workers x baseline examples_per_sec); baseline: the "
            "1-device cell of the same configuration in the same run (same per-replica batch for weak, "
            "same global batch for strong).",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI. Measured in turns (ratio_instances set): a Student-t over "
            "group instances of the mean log ratio of adjacent turns, divided by replicas x workers "
            "(the ratios table has the details); otherwise Welch's t on the log process figures of "
            "the cell and of its baseline, divided by replicas x workers.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    ratio_instances: Annotated[
        int | None,
        Col(
            "instances",
            "Group instances behind scaling_efficiency when it was measured in turns (null: from "
            "separately measured processes, e.g. a real cluster's passes).",
        ),
    ] = None
    baseline_cell_id: Annotated[
        str | None, Col("", "cell_id of that baseline (empty when none was measured in the run).")
    ] = None


@dataclass(frozen=True, kw_only=True)
class Flops:
    """The model's FLOPs, parameters and gradient size."""

    flops_per_example: Annotated[
        int | None,
        Col(
            "FLOP",
            "Training FLOPs per example, what MFU divides by: forward + weight gradients + input "
            "gradients (none for the first layer) of convolutions and matmuls, 2 FLOPs per "
            "multiply-add (rounded to an integer); counted by the worker from the traced step "
            "(flops_source 'counted': harness.formulas.flops), or the built-in model's analytic count "
            "where it could not; null when neither is known (no MFU).",
        ),
    ] = None
    flops_source: Annotated[
        str | None,
        Col("", "counted (from the traced step, in the worker) or analytic (harness.spec.models)."),
    ] = None
    flops_analytic: Annotated[
        int | None,
        Col("FLOP", "The built-in model's analytic training FLOPs per example (a check on the count)."),
    ] = None
    flops_note: Annotated[
        str | None,
        Col(
            "",
            "What the FLOP count could not see (ops with unknown shapes, nested functions), or why it failed.",
        ),
    ] = None
    trainable_parameters: Annotated[
        int | None, Col("", "Trainable parameters of the model, counted in the worker.")
    ] = None
    gradient_bytes: Annotated[
        int | None,
        Col("B", "Bytes of the gradients an update all-reduces (trainable variables' sizes x their dtypes)."),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Updates:
    """Optimizer updates and all-reduces: rates, counts, balance."""

    optimizer_updates_per_sec: Annotated[
        float | None, Col("updates/s", "examples_per_sec / effective_batch.", figure=True)
    ] = None
    allreduces_per_update: Annotated[
        float | None,
        Col(
            "reductions",
            "Cross-replica reductions per optimizer update, counted: every top-level "
            "reduce/batch_reduce call of the strategy's cross-device ops traced into the training "
            "function: the gradients' (micro-batch phase x accum_steps + apply phase), plus, in the ctl"
            " loop, the loss's, one per call of steps_per_execution updates (so 1 + "
            "1/steps_per_execution on several replicas without accumulation). Keras fit's own handling "
            "of its logs is not counted. 0 where none is made: one device (default, one_device, or "
            "mirrored with one replica, whose reduce TensorFlow skips).",
        ),
    ] = None
    allreduces_per_example: Annotated[
        float | None, Col("reductions/example", "allreduces_per_update / effective_batch.")
    ] = None
    straggler_ratio: Annotated[
        float | None,
        Col(
            "1",
            "Median over processes of: parameter_server (asynchronous), the busiest worker's updates "
            "over the idlest's in the timed windows (inf: a worker ran none; a slow worker runs fewer);"
            " co-tenants, the fastest tenant's throughput over the slowest's; 1.0 for one process. Null"
            " for synchronous multi-worker cells (multi_worker_mirrored): every worker's window ends at"
            " the same all-reduce, so a slow worker cannot show in its own time.",
            figure=True,
            median=True,
        ),
    ] = None
    updates_run: Annotated[
        int | None,
        Col(
            "updates",
            "Optimizer updates the loop ran in the cell (first call, calibration, warm-up and timed "
            "windows), counted by the caller of the training function (the coordinator under "
            "parameter_server).",
        ),
    ] = None
    optimizer_iterations: Annotated[
        int | None,
        Col(
            "updates",
            "optimizer.iterations after the timed windows (before the breakdown): equal to updates_run (checked) for "
            "synchronous strategies; lower under parameter_server, where Keras 3 increments it by a "
            "read then an assign on the ps and concurrent workers lose increments (the weight updates "
            "themselves are atomic assign_sub ops).",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Tenancy:
    """Co-tenants: each tenant's share and the co-tenancy ratio."""

    tenant_examples_per_sec_min: Annotated[
        float | None,
        Col(
            "examples/s",
            "Co-tenancy: the slowest tenant's throughput over the span where every tenant was timing, "
            "median over processes (equals examples_per_sec with one tenant).",
            figure=True,
            median=True,
        ),
    ] = None
    tenant_examples_per_sec_max: Annotated[
        float | None,
        Col(
            "examples/s",
            "Co-tenancy: the fastest tenant's throughput over that span, median over processes.",
            figure=True,
            median=True,
        ),
    ] = None
    tenant_share_min: Annotated[
        float | None,
        Col(
            "1",
            "Co-tenancy: the slowest tenant's throughput / the aggregate (1/tenants is a fair split; "
            "1.0 with one tenant). The aggregate examples_per_sec of a co-tenant process is the sum of "
            "each tenant's examples / seconds over its windows wholly inside the span where every "
            "tenant was timing.",
            figure=True,
            median=True,
        ),
    ] = None
    cotenancy_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "Aggregate examples_per_sec with this many tenants / examples_per_sec of the same cell "
            "alone (tenants 1) in the same run: 1.0 means sharing the devices costs nothing in "
            "aggregate; per tenant it is cotenancy_ratio / tenants. Null with one tenant or without "
            "that row.",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI (Welch's t on the log process figures of both cells).",
            "Upper end of the same CI.",
        ),
    ] = Estimate()


@dataclass(frozen=True, kw_only=True)
class Foreign:
    """A co-tenant from another framework (JAX, PyTorch): both sides alone and together."""

    tenant_framework_version: Annotated[
        str | None, Col("", "The co-tenant's framework and its version, e.g. jax 0.10.2.")
    ] = None
    tenant_device: Annotated[
        str | None, Col("", "The device the co-tenant trained on, as its framework names it.")
    ] = None
    tenant_flops_per_example: Annotated[
        int | None,
        Col(
            "FLOPs",
            "Training FLOPs per example counted from the co-tenant's own traced update (2 per multiply-add"
            " of every matrix product and convolution, as flops_per_example); tenant_flops_note compares them.",
        ),
    ] = None
    tenant_flops_note: Annotated[
        str | None,
        Col("", "Whether the co-tenant's count equals the TensorFlow side's (it must: the same model)."),
    ] = None
    alone_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "With a co-tenant from another framework: the TensorFlow side's throughput in its turns alone, "
            "median over its turns in each process, then median over processes.",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI: Student t over the processes (instances), log scale.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    tenant_alone_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "The co-tenant's throughput in its turns alone (as alone_examples_per_sec).",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI: Student t over the processes (instances), log scale.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    tenant_together_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "The co-tenant's throughput while the TensorFlow side timed its own window in the same turn: "
            "its whole steps that ended before the TensorFlow window did.",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI: Student t over the processes (instances), log scale.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    shared_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "The TensorFlow side's throughput together / alone, measured in turns of the same processes "
            "(relation shared in the ratios table): the share of its speed it keeps beside the co-tenant.",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI: Student t over instances of the blocks' mean log ratio.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    tenant_shared_ratio: Annotated[
        Estimate,
        Col("1", "The co-tenant's throughput together / alone, as shared_ratio.", figure=True),
        CI(
            "Lower end of its 95% CI: as shared_ratio's.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    interference_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "shared_ratio + tenant_shared_ratio per process, median over processes: what both sides "
            "train together relative to taking turns with the device. 1.0: sharing is as good as "
            "time-slicing; above 1 each fills the other's idle time; below 1 they contend (caches, "
            "memory bandwidth, threads).",
            figure=True,
        ),
        CI(
            "Lower end of its 95% CI: Student t over the processes (instances), log scale.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()


@dataclass(frozen=True, kw_only=True)
class Utilization:
    """The run's measured matmul peak for the cell, and MFU against it."""

    peak_flops_per_sec: Annotated[
        Estimate,
        Col(
            "FLOP/s",
            "The run's matmul peak for this cell: the median over the run's peak processes (own "
            "processes, at the start, between passes and at the end) of each one's best rate of "
            "distinct n x n matmuls (n=1024 on CPU, 8192 on GPU) in peak_dtype on one device, scaled to"
            " what the cell ran on: x device_count on GPUs, x peak_cores / host_cores on CPU.",
            figure=True,
        ),
        CI(
            "Lower end of the 95% CI of that peak over the peak processes (same log-t interval and scaling).",
            "Upper end of the same CI.",
        ),
    ] = Estimate()
    peak_dtype: Annotated[
        str | None,
        Col(
            "",
            "Compute dtype of the peak used for mfu: the cell's (float32, bfloat16 or float16); float32"
            " on GPUs runs as TF32 when build_info says tensor_float_32.",
        ),
    ] = None
    peak_cores: Annotated[
        int | None,
        Col(
            "cores",
            "CPU cores the cell's processes had in all (cores_per_worker x processes, at most "
            "host_cores) that the CPU peak is scaled to; null on GPUs.",
        ),
    ] = None
    mfu: Annotated[
        float | None,
        Col(
            "1",
            "examples_per_sec x flops_per_example / peak_flops_per_sec: within a run, rows of one dtype"
            " and core count share one peak, so their mfu differ exactly by their throughput ratio.",
            figure=True,
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Energy:
    """Energy, where a counter exists."""

    energy_j_per_example: Annotated[
        float | None,
        Col(
            "J/example",
            "GPU energy per example, median over processes: NVML total-energy counters of the GPUs the "
            "process uses (not every GPU of the machine) over the metered span (first call, "
            "calibration, warm-up and timed windows) / the examples trained in it; co-tenants (who "
            "meter the same GPUs): their mean power / their aggregate examples_per_sec. Null on CPU, "
            "for multi-worker cells and without NVML.",
            figure=True,
            median=True,
        ),
    ] = None
    gpu_watts: Annotated[
        float | None,
        Col(
            "W",
            "Mean GPU power over the metered span (joules / seconds), median over processes; "
            "co-tenants: the mean of the tenants' readings.",
            figure=True,
            median=True,
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Memory:
    """GPU memory: what the cell's training held at most, and the limit it ran under."""

    gpu_memory_peak_mib: Annotated[
        float | None,
        Col(
            "MiB",
            "The most GPU memory TensorFlow's allocator held on any one of the process's GPUs "
            "(tf.config.experimental.get_memory_info's peak, from the build through the timed "
            "windows), median over processes: what this batch needs. Null on CPU.",
            median=True,
        ),
    ] = None
    gpu_memory_limit_mib: Annotated[
        float | None,
        Col(
            "MiB",
            "The memory limit of each logical GPU the process's replicas ran on (a GPU split by "
            "--replicas above the GPU count); null on whole GPUs and on CPU.",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Checks:
    """What the integrity checks read."""

    final_loss: Annotated[
        float | None,
        Col(
            "",
            "Loss of the last optimizer update of the last timed window (mean over the update's "
            "effective batch).",
        ),
    ] = None
    weights_digest: Annotated[
        str | None,
        Col(
            "",
            "SHA-256 (first 16 hex digits) of all model weights' bytes after the timed windows (before "
            "the breakdown, whose parts_step_s trains more updates); equal digests mean bitwise-equal "
            "weights.",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Breakdown:
    """Where an update's time goes (the step breakdown)."""

    step_s: Annotated[
        float | None, Col("s/update", "Time per optimizer update = effective_batch / examples_per_sec.")
    ] = None
    parts_step_s: Annotated[
        float | None,
        Col(
            "s/update",
            "The cell's own update (its training function, as in the timed windows: input, all-reduce "
            "and optimizer step included), timed in the same process as the parts below and in the "
            "same rounds (one window of it, then one of each part; five rounds, up to fifteen while a "
            "part exceeds it by more than harness.formulas.breakdown.NOISE; median window), after the "
            "timed windows, in the cell's first pass: the step whose shares the parts are, so both are "
            "timed under the same conditions; null where the parts are not measured.",
            median=True,
        ),
    ] = None
    compute_s: Annotated[
        float | None,
        Col(
            "s/update",
            "The update's forward and backward passes as its training function runs them (the same "
            "replica function: accum_steps micro-batches of per_replica_batch, gradients summed "
            "locally, under strategy.run on every replica, one update per iteration of an in-graph "
            "loop) with no cross-replica reduction, no optimizer step and no input pipeline (one "
            "update's batch already on the devices), median over the processes that measured it; null "
            "where it cannot be isolated (parameter_server).",
            median=True,
        ),
    ] = None
    allreduce_s: Annotated[
        float | None,
        Col(
            "s/update",
            "One cross-replica all-reduce of the model's gradient set (same shapes, dtype and "
            "cross-device ops as the optimizer's), alone, per update; 0 with one device (no reduction);"
            " null for parameter_server (no all-reduce: variables live on the ps tasks).",
            median=True,
        ),
    ] = None
    input_s: Annotated[
        float | None,
        Col(
            "s/update",
            "The input pipeline alone: pulling one update's micro-batches through the same distributed "
            "iterator, per update.",
            median=True,
        ),
    ] = None
    dispatch_s: Annotated[
        float | None,
        Col(
            "s/update",
            "Host dispatch: one call of an empty function under the same strategy (strategy.run of a "
            "constant), divided by steps_per_execution.",
            median=True,
        ),
    ] = None
    profiled_step_s: Annotated[
        float | None,
        Col(
            "s/update",
            "GPU cells: one window of the cell's own training function (about 0.3 s of updates, after "
            "the timed windows, in the cell's first pass) under TensorFlow's profiler, per update; the "
            "four parts below add up to it exactly (harness.formulas.timeline). The profiler's own "
            "overhead is in it, so it can exceed step_s; null on CPUs and where nothing was recorded "
            "on the GPU (bound_reason says why).",
            median=True,
        ),
    ] = None
    device_s: Annotated[
        float | None,
        Col(
            "s/update",
            "GPU cells: time the busiest GPU ran a kernel or memory copy other than a collective, in "
            "the profiled window, per update.",
            median=True,
        ),
    ] = None
    collective_s: Annotated[
        float | None,
        Col(
            "s/update",
            "GPU cells: time the busiest GPU ran only collective (NCCL) kernels, per update.",
            median=True,
        ),
    ] = None
    input_wait_s: Annotated[
        float | None,
        Col(
            "s/update",
            "GPU cells: time the busiest GPU ran nothing while the host waited for the next input "
            "element (IteratorGetNext and the like), per update.",
            median=True,
        ),
    ] = None
    host_s: Annotated[
        float | None,
        Col(
            "s/update",
            "GPU cells: time the busiest GPU ran nothing otherwise (it waited for the host to launch "
            "its kernels: Python, dispatch, the executor), per update.",
            median=True,
        ),
    ] = None
    overlap: Annotated[
        float | None,
        Col(
            "1",
            "(compute_s + allreduce_s + input_s + dispatch_s - parts_step_s) / parts_step_s: > 0 when "
            "parts overlap (e.g. input prefetched during compute), < 0 when the step holds time no part "
            "explains (the remainder: optimizer arithmetic, synchronisation, contention).",
        ),
    ] = None
    bound: Annotated[
        str | None,
        Col(
            "",
            "CPU cells: compute, communication, input or dispatch: the part with the largest share of "
            "parts_step_s (harness.formulas.breakdown); null when the parts are not measured, or when "
            "a part's share is above 100% + harness.formulas.breakdown.NOISE (10%): a part cannot take "
            "longer than the update it is a piece of, so no verdict is given (bound_reason says "
            "which). GPU cells: device, communication, input or host, the largest of device_s, "
            "collective_s, input_wait_s and host_s (host: the GPU waits for the host to launch its "
            "kernels; raise steps_per_execution or the batch, or try --jit-compile on).",
        ),
    ] = None
    bound_reason: Annotated[
        str | None,
        Col(
            "",
            "The figures behind bound (every part's share of parts_step_s, the overlap) and the knob "
            "that would help (e.g. accumulation steps or another cross-device op when "
            "communication-bound, steps_per_execution when dispatch-bound); or, with no verdict, the "
            "part that exceeded the step.",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class Machine:
    """Where the cell ran: device, host, threads, software, environment."""

    device_kind: Annotated[str | None, Col("", "GPU or CPU.")] = None
    device_name: Annotated[str | None, Col("", "GPU model, or CPU model for CPU runs.")] = None
    host_cpu: Annotated[str | None, Col("", "CPU model name.")] = None
    host_cores: Annotated[int | None, Col("cores", "Logical cores the OS reports.")] = None
    intra_op_threads: Annotated[
        int | None,
        Col(
            "threads",
            "Threads of TensorFlow's intra-op pool: its tf.config setting, else TF_NUM_INTRAOP_THREADS "
            "(local workers split the cores so), else one per CPU the process may run on (its "
            "affinity).",
        ),
    ] = None
    inter_op_threads: Annotated[
        int | None, Col("threads", "tf.config.threading inter-op setting (0 = default).")
    ] = None
    tf_version: Annotated[str | None, Col("", "TensorFlow version.")] = None
    keras_version: Annotated[str | None, Col("", "Keras version.")] = None
    python_version: Annotated[str | None, Col("", "Python version.")] = None
    build_info: Annotated[
        str | None,
        Col(
            "JSON",
            "CUDA/cuDNN/ROCm versions TensorFlow was built with, the NVIDIA driver, and whether float32"
            " matmuls run as TF32 on this GPU (tensor_float_32: TensorFlow allows it, "
            "NVIDIA_TF32_OVERRIDE is not 0 and the GPU has compute capability >= 8.0; then the float32 "
            "peak and mfu are against TF32). NVIDIA_TF32_OVERRIDE itself is in env.",
        ),
    ] = None
    env: Annotated[
        str | None,
        Col(
            "JSON",
            "TF_*, NCCL_*, OMP_*, KMP_*, CUDA/HIP_VISIBLE_DEVICES, XLA_FLAGS and NVIDIA_TF32_OVERRIDE "
            "of the worker.",
        ),
    ] = None
    fingerprint: Annotated[
        str | None,
        Col(
            "",
            "Hash of the stable hardware and software facts above: rows with equal fingerprints are "
            "comparable over time.",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class CellRow:
    """One row of the cells table: one cell of one run, as typed groups. Its columns are the
    groups' fields in order (:func:`harness.contract.columns.leaves`; a group adds no prefix, an
    :class:`Estimate` adds ``_ci_low`` and ``_ci_high``). Every group but ``cell`` may be empty
    while the row is assembled."""

    run: RunInfo = RunInfo()
    ab: AbInfo | None = None
    cell: Axes
    status: Annotated[
        Status | None,
        Col(
            "",
            "ok (measured and checked), unsupported (TensorFlow cannot run it correctly here), failed "
            "(crashed or timed out), invalid (ran, but an integrity check failed), not measured "
            "(runnable, but the run's budget was spent before its first process).",
        ),
    ] = None
    """None only while a worker's row is assembled: every stored row has one."""
    reason: Annotated[str, Col("", "Why the row is not ok (empty when ok).")] = ""
    examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "Median over the cell's processes of each process's figure (the median over its timed "
            "windows of window_steps x effective_batch / window_seconds: global examples count every "
            "replica, worker and micro-batch).",
            figure=True,
        ),
        CI(
            "Lower end of the 95% CI of the figure: exp(c - h), c = mean(log x_p) over the process "
            "figures x_p, h = t(0.975, P-1) x sd(log x_p) / sqrt(P) (between- and within-process noise "
            "of this run). With ci_history_runs = k > 0, h = max(that, t(0.975, k) x sd(log r_j)), r_j "
            "this run's and the k newest earlier runs' figures of the cell on the same fingerprint: it "
            "then also covers run-to-run drift. Null with fewer than 2 processes and no history.",
            "Upper end of the same CI.",
        ),
    ] = Estimate()

    spread: Spread = Spread()
    timing: Timing = Timing()
    ran: Execution = Execution()
    efficiency: Efficiency = Efficiency()
    flops: Flops = Flops()
    updates: Updates = Updates()
    tenancy: Tenancy = Tenancy()
    foreign: Foreign = Foreign()
    peak: Utilization = Utilization()
    energy: Energy = Energy()
    memory: Memory = Memory()
    checks: Checks = Checks()
    breakdown: Breakdown = Breakdown()
    machine: Machine | None = None
    """Null where the worker never reported its facts (a cell that failed before, or unsupported)."""


WindowRow = TypedDict(
    "WindowRow",
    {
        "run_id": Annotated[str, Col("", "As in the cells table.")],
        "cell_id": Annotated[str, Col("", "As in the cells table.")],
        "worker": Annotated[
            int,
            Col(
                "",
                "Worker index (0 for single-process strategies; one row per worker and window otherwise); "
                "for co-tenant cells the tenant index, each tenant's own windows (every window is kept; the"
                " aggregate uses those inside the tenants' common span).",
            ),
        ],
        "pass": Annotated[
            int,
            Col(
                "",
                "0-based pass of the run in which this window's process ran (a cell runs once per pass, so "
                "the pass identifies its process); for `ab` rows, the pair index.",
            ),
        ],
        "ab_side": Annotated[
            str | None,
            Col("", "`ab`: A or B, the side whose process timed this window (null for other runs)."),
        ],
        "repeat": Annotated[int, Col("", "0-based index of the timed window within its process.")],
        "framework": Annotated[
            str | None,
            Col(
                "",
                "With a co-tenant from another framework: the side that timed this window (tensorflow, "
                "jax, torch; the co-tenant's windows have worker 1 and no start_s); null elsewhere.",
            ),
        ],
        "shared": Annotated[
            bool | None,
            Col(
                "",
                "With a co-tenant from another framework: the window was taken while the other side "
                "trained (a turn together); false: alone. Null elsewhere.",
            ),
        ],
        "window_steps": Annotated[int, Col("updates", "Optimizer updates in the window.")],
        "start_s": Annotated[
            float | None,
            Col(
                "s",
                "Start of the window on the host's monotonic clock (comparable between processes of one "
                "host, not between hosts or boots).",
            ),
        ],
        "window_s": Annotated[
            float,
            Col(
                "s",
                "Wall time of the window: from the previous host sync to this window's host sync (single "
                "process), or between the cross-worker barriers around it (multi-worker: the same for every"
                " worker).",
            ),
        ],
        "worker_s": Annotated[
            float | None,
            Col(
                "s",
                "This worker's own time in the window: from the start barrier to its own host sync (equals "
                "window_s in a single process; null under parameter_server).",
            ),
        ],
        "worker_updates": Annotated[
            int | None,
            Col(
                "updates",
                "parameter_server: the updates this worker ran in the window (they sum to window_steps); "
                "null elsewhere.",
            ),
        ],
        "examples": Annotated[
            int,
            Col(
                "examples",
                "Global examples processed in the window (all replicas, workers and micro-batches).",
            ),
        ],
        "examples_per_sec": Annotated[float | None, Col("examples/s", "examples / window_s.")],
    },
    total=False,
)
"""One row of the windows table: one timed window of one worker process. (Functional syntax: ``pass`` is a keyword.)"""


class CollectiveRow(TypedDict, total=False):
    """One row of the collectives table: one all-reduce payload of one topology (``run --sweep collectives``)."""

    run_id: Annotated[str, Col("", "Id of the run.")]
    timestamp: Annotated[str, Col("ISO 8601 UTC", "When the row was written.")]
    suite_version: Annotated[str, Col("", "harness version and git commit of the suite that measured.")]
    fingerprint: Annotated[str | None, Col("", "Hardware/software fingerprint (as in cells).")]
    device_kind: Annotated[str | None, Col("", "GPU or CPU.")]
    device_name: Annotated[str | None, Col("", "GPU model, or CPU model.")]
    host_cores: Annotated[int | None, Col("cores", "Logical cores the OS reports.")]
    tf_version: Annotated[str | None, Col("", "TensorFlow version.")]
    status: Annotated[
        Status,
        Col(
            "",
            "ok (measured, sum checked), unsupported, failed or invalid (the all-reduce returned a "
            "wrong sum).",
        ),
    ]
    reason: Annotated[str, Col("", "Why the row is not ok (empty when ok).")]
    strategy: Annotated[
        str,
        Col(
            "",
            "mirrored (cross-device ops across the replicas of one process) or multi_worker_mirrored "
            "(collectives across worker processes).",
        ),
    ]
    op: Annotated[
        str,
        Col(
            "",
            "Requested cross_device_ops (mirrored: auto, nccl, hierarchical_copy, "
            "reduction_to_one_device) or communication (multi_worker_mirrored: auto, ring, nccl).",
        ),
    ]
    effective_op: Annotated[
        str | None, Col("", "What the strategy object really used, e.g. CollectiveAllReduce(RING).")
    ]
    replicas: Annotated[int, Col("devices", "Replicas per worker.")]
    workers: Annotated[int, Col("processes", "Worker processes.")]
    devices: Annotated[int, Col("devices", "n = replicas x workers, the all-reduce's participants.")]
    payload: Annotated[
        str,
        Col(
            "",
            "bytes (one float32 tensor of the row's size, the size sweep) or a model's gradient set "
            "(cnn, dense: one tensor per trainable variable, as the optimizer hands them over).",
        ),
    ]
    tensors: Annotated[int | None, Col("tensors", "Tensors reduced in one all-reduce call.")]
    bytes: Annotated[
        int | None,
        Col("bytes", "Bytes each participant contributes to one all-reduce (the nccl-tests size)."),
    ]
    time_s: Annotated[
        float | None,
        Col(
            "s",
            "Median over processes of each process's median time of one all-reduce (timed in-graph "
            "loops of calls, each window ending with a host sync).",
        ),
    ]
    time_s_ci_low: Annotated[
        float | None,
        Col(
            "s",
            "Lower end of the 95% CI of time_s over processes (log-scale Student t, as examples_per_sec).",
        ),
    ]
    time_s_ci_high: Annotated[float | None, Col("s", "Upper end of the same CI.")]
    processes: Annotated[int | None, Col("processes", "Independent processes behind time_s.")]
    process_time_s: Annotated[list[float] | None, Col("s", "Each process's figure, in pass order.")]
    algbw_gbps: Annotated[float | None, Col("GB/s", "bytes / time_s / 1e9 (nccl-tests algorithm bandwidth).")]
    busbw_gbps: Annotated[
        float | None,
        Col(
            "GB/s",
            "algbw_gbps x 2(n-1)/n (nccl-tests bus bandwidth of an all-reduce: comparable with the "
            "link's bandwidth whatever n).",
        ),
    ]
    calls: Annotated[int | None, Col("all-reduces", "All-reduce calls per timed window.")]
    max_rel_error: Annotated[
        float | None,
        Col(
            "1",
            "Worst |result - expected| / expected over the checked elements (participant k contributes "
            "k + 1, so the sum is n(n+1)/2).",
        ),
    ]


@dataclass(frozen=True, kw_only=True)
class RatioRow:
    """One row of the ratios table: one comparison of a run, measured in turns (``run``, ``ab``).

    Formulas (harness.formulas.turns): in each block of an instance, a member's throughput is its
    examples over its seconds in its two turns of the block; the block's log ratio is log(subject /
    reference) of those; the instance's log ratio is the mean over its blocks; the ratio is
    exp(mean over instances) x scale, its CI a Student-t over instances."""

    run: RunInfo = RunInfo()
    fingerprint: Annotated[
        str | None, Col("", "Hardware/software fingerprint the run's processes reported.")
    ] = None
    relation: Annotated[
        Relation,
        Col(
            "",
            "What the ratio compares: scaling (a cell against its 1-device baseline; the ratio is the "
            "scaling efficiency), cross_device_ops (an op against auto), strategy (against default), "
            "accumulation (k against 1), loop (fit against ctl), cotenancy (T tenants against 1), "
            "xla (--jit-compile on against off), ab (side B against side A), fastest (a "
            "configuration against its model's fastest), "
            "shared (a side with a co-tenant from another framework against itself alone).",
        ),
    ]
    subject: Annotated[str, Col("", "cell_id of the numerator (ab: 'B:' + cell_id).")]
    reference: Annotated[str, Col("", "cell_id of the denominator (ab: 'A:' + cell_id).")]
    group: Annotated[str, Col("", "The group whose instances measured it (g0, g1, ... ; r0, ... races).")]
    ratio: Annotated[
        Estimate,
        Col(
            "1",
            "exp(mean over instances of the instance log ratio) x scale: subject / reference "
            "throughput (examples/s), from adjacent turns of live processes.",
        ),
        CI("Lower end of the 95% CI: Student-t over instances of the mean log ratio, x scale."),
    ] = Estimate()
    scale: Annotated[float, Col("1", "Factor applied to the throughput ratio (scaling: 1 / devices).")]
    instances: Annotated[int, Col("instances", "Completed group instances (fresh processes) behind it.")]
    blocks: Annotated[int, Col("blocks", "Blocks of turns per instance.")]
    turn_s: Annotated[float, Col("s", "Target length of one turn (a timed window).")]
    min_effect: Annotated[
        float | None,
        Col(
            "1",
            "The smallest change the verdict calls (run --min-effect; ab --min-effect); null before 2026-11-26: 0.05.",
        ),
    ] = None
    sd_between: Annotated[
        float | None, Col("log", "Standard deviation of the instance log ratios (ddof 1).")
    ] = None
    sd_within: Annotated[
        float | None, Col("log", "Pooled standard deviation of block log ratios inside instances.")
    ] = None
    p_value: Annotated[
        float | None, Col("1", "Two-sided one-sample t-test of mean instance log ratio = 0.")
    ] = None
    verdict: Annotated[
        str,
        Col(
            "",
            "higher, lower, equivalent, undecided, or not measured (no instance; the note says why): "
            "higher/lower only when the Benjamini-Hochberg procedure over the run's comparisons (false "
            "discovery rate 5%) rejects its p-value, its CI excludes 1 and it differs from 1 by at least the "
            "minimum effect (min_effect: run --min-effect, 5% by default; ab --min-effect); equivalent "
            "when its CI lies inside [1/(1 + min_effect), 1 + min_effect] (no difference of min_effect "
            "or more); else undecided. For a scaling efficiency the verdict is on the "
            "speed-up (ratio / scale against 1).",
        ),
    ]
    decided: Annotated[
        bool,
        Col(
            "",
            "True when the verdict is higher, lower or equivalent (more instances "
            "would not change the verdict's kind).",
        ),
    ]
    extra_instances: Annotated[
        int | None,
        Col(
            "instances",
            "Further instances likely to decide it at the measured spread (0: decided, or decided on its own "
            "and held back by the false-discovery control).",
        ),
    ] = None
    extra_s: Annotated[
        float | None, Col("s", "Those instances' likely wall time (the extra budget to decide it).")
    ] = None
    dropped_instances: Annotated[
        int, Col("instances", "Instances of its group dropped (a member failed or a deadline passed).")
    ]
    note: Annotated[
        str,
        Col(
            "",
            "Why the comparison was not measured in turns (empty when it was): e.g. its group's "
            "members did not fit in the GPUs' memory together, so they ran one after another and the "
            "cell rows' ratios come from separately measured processes.",
        ),
    ]
    disturbed_blocks: Annotated[
        int,
        Col(
            "blocks",
            "Blocks of its group's instances left out of the ratio because in one of their turns "
            "something other than the member (another process, the hypervisor's steal) used more "
            "than a quarter of a CPU: the host's busy CPU time (/proc/stat) during the turn less "
            "the member's own CPU time.",
        ),
    ]


class CostRow(TypedDict):
    """One row per local run in turns (the ``costs`` table): where the run's wall time went, so the
    suite's own cost is tracked like any other figure (``compare`` prints its change). Phases are
    summed over the run's group instances on the parent's clock; an instance's phases follow each
    other, so they add up to its wall time."""

    run_id: Annotated[str, Col("", "Id of the run.")]
    timestamp: Annotated[str, Col("ISO 8601 UTC", "When the row was written.")]
    suite_version: Annotated[str, Col("", "harness version and git commit of the suite that measured.")]
    resumes: Resumes
    fingerprint: Annotated[str | None, Col("", "Hardware/software fingerprint of the run's processes.")]
    budget_s: Annotated[float, Col("s", "The run's budget (--budget-min x 60).")]
    wall_s: Annotated[float, Col("s", "The run, from its first process to its rows written.")]
    instances: Annotated[int, Col("instances", "Group instances run (dropped ones included).")]
    processes: Annotated[
        int, Col("processes", "Worker processes those instances started (servers included).")
    ]
    forked: Annotated[bool, Col("", "Workers were forked from a fork server (False: --no-fork).")]
    start_s: Annotated[
        float,
        Col(
            "s",
            "From each instance's start to every member ready: start (fork or interpreter), import, "
            "devices, build, first call (the first instance also waits for the fork server's import).",
        ),
    ]
    calibration_s: Annotated[float, Col("s", "Calibration turns: each member's window length and warm-up.")]
    turns_s: Annotated[float, Col("s", "Window turns, wall time (the timed windows and the hand-overs).")]
    windows_s: Annotated[float, Col("s", "Timed windows inside the window turns: the measurement itself.")]
    finish_s: Annotated[float, Col("s", "Finishing turns: integrity checks and the step breakdown.")]
    exit_s: Annotated[float, Col("s", "From the last finishing turn to every process of the instance gone.")]
    peak_s: Annotated[float, Col("s", "The matmul-peak processes.")]
    parent_s: Annotated[
        float,
        Col(
            "s", "The rest of wall_s: the parent's own work (planning, rows, files) and fork servers' start."
        ),
    ]
    fixed_s_per_process: Annotated[
        float | None,
        Col(
            "s",
            "Median over completed instances of (instance wall - timed windows) / its processes: the "
            "fixed cost of one measured process.",
        ),
    ]


@dataclass(frozen=True, kw_only=True)
class ChangePoint:
    """Rule (b) of ``nightly``: the change point it found tonight (every field None: none)."""

    change_point: Annotated[
        str | None,
        Col("", "Rule (b), when it found one tonight: the label of the first night after the change."),
    ] = None
    change_point_shift: Annotated[
        float | None, Col("1", "Rule (b): the level after the change over before.")
    ] = None
    change_point_p: Annotated[float | None, Col("1", "Rule (b): the permutation p-value.")] = None
    change_point_new: Annotated[
        bool | None, Col("", "Rule (b): a new alarm (False: rule (a) had flagged it on a night since).")
    ] = None


@dataclass(frozen=True, kw_only=True)
class NightlyRow:
    """One row of the nightly table: one cell's night of ``nightly`` (a point of its series), with
    what both decisions said that night (harness.analysis.nightly). A series is the rows with equal
    ``series``: the same cell, machine and reference software (the reference's fingerprint), suite
    version and reference pin."""

    night_id: Annotated[
        str, Col("", "Id of the night (its pair rows are under nightly/cells, run_id = night_id).")
    ]
    timestamp: Annotated[str, Col("ISO 8601 UTC", "When the night ended.")]
    label: Annotated[
        str, Col("", "The night's --label: a commit, a date or a wheel version (default: the date).")
    ]
    cell_id: Annotated[str, Col("", "The cell, as in the cells table.")]
    series: Annotated[
        str | None,
        Col(
            "",
            "16-hex hash of cell_id, fingerprint, the suite's package version (bumped when what is measured "
            "changes; not the commit) and reference_pin: the series key.",
        ),
    ] = None
    suite_version: Annotated[str, Col("", "harness version and git commit of the suite that measured.")]
    fingerprint: Annotated[
        str | None, Col("", "Hardware/software fingerprint of the reference's processes (as in cells).")
    ] = None
    host_cpu: Annotated[str | None, Col("", "The machine's CPU model.")] = None
    device_name: Annotated[
        str | None, Col("", "The device the cell ran on (the GPU's name, or the CPU's).")
    ] = None
    candidate: Annotated[str, Col("", "--candidate as given: a requirement spec or an interpreter path.")]
    reference: Annotated[str, Col("", "--baseline as given (the build compared against).")]
    candidate_versions: Annotated[
        str | None, Col("", "What the candidate resolved to: TensorFlow and Keras versions.")
    ] = None
    reference_versions: Annotated[str | None, Col("", "What the reference resolved to.")] = None
    reference_pin: Annotated[
        str | None,
        Col(
            "",
            "12-hex sha256 of the reference environment's `pip freeze` (its lock file, "
            "nightly/reference-<hash>.txt), or of the interpreter's when --baseline is a path.",
        ),
    ] = None
    status: Annotated[Status, Col("", "ok, or failed (reason says which side, which pair and why).")]
    reason: Annotated[str | None, Col("", "Why the cell has no point tonight.")] = None
    pairs: Annotated[
        int, Col("pairs", "Pairs of live candidate and reference processes (in turns) behind it.")
    ]
    ratio: Annotated[
        Estimate,
        Col(
            "1", "Candidate / reference throughput (examples/s): exp(mean over pairs of the pair log ratio)."
        ),
        CI("Lower end of the 95% CI of ratio (Student t over pairs)."),
    ] = Estimate()
    log_ratio_se: Annotated[float | None, Col("1", "Standard error of the mean pair log ratio.")] = None
    change: Annotated[
        Estimate,
        Col(
            "1", "Rule (a): tonight's ratio over its baseline's level (the reference's, 1, with no baseline)."
        ),
        CI("Lower end of rule (a)'s 95% CI of change."),
    ] = Estimate()
    verdict: Annotated[
        str | None,
        Col(
            "",
            "Rule (a), in the suite's four verdicts: lower (a regression alarm) or higher (an "
            "improvement: the CI wholly beyond min_effect of 1), equivalent (wholly within), "
            "undecided; or reverted (back at the level before the previous night's alarm). Rows "
            "written before 2026-11-26 say regression, improvement, no change.",
        ),
    ] = None
    baseline: Annotated[
        str | None, Col("", "Labels of rule (a)'s baseline nights, comma-separated (empty: the reference).")
    ] = None
    change_point: ChangePoint = ChangePoint()
    alarm: Annotated[
        str | None, Col("", "The new alarms tonight (regression, improvement), comma-separated.")
    ] = None
    min_effect: Annotated[float, Col("1", "Rule (a)'s F (--min-effect).")]
    budget_min: Annotated[float | None, Col("min", "The night's --budget-min.")] = None
