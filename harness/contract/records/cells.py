"""The cells table's row (:class:`CellRow`): one cell of one run, a frozen dataclass of typed
groups (the cell's axes, its figure as an :class:`~harness.contract.columns.Estimate`, the process
spread, FLOPs, the peak and MFU, the breakdown, the co-tenant sides, the machine). Pure: no
pyarrow, no pandas."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import CI, Col, Estimate
from harness.contract.records.shared import AbSide, CellId, EffectiveOp, Machine, Reason, RunInfo, Status
from harness.contract.records.shared import axis_column as _axis
from harness.spec.axes import COMPUTE_DTYPE


def _in_words(values: Iterable[str]) -> str:
    """``a, b or c``."""
    *rest, last = values
    return f"{', '.join(rest)} or {last}" if rest else last


_OVER_PROCESSES = CI("Lower end of its 95% CI: Student t over the processes (instances), log scale.")
"""The CI of a co-tenant figure that is a median over processes."""

_STATUS = ", ".join(f"{s.value} ({s.meaning})" for s in Status) + "."
"""The ``status`` column's description: every :class:`Status` and its meaning."""


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
    ab_side: AbSide = None
    ab_pair: Annotated[
        int | None,
        Col(
            "",
            "`ab`: 0-based pair index; the pair's A and B processes took turns (turns) or ran back to "
            "back (alternate), in a random order.",
        ),
    ] = None
    ab_mode: Annotated[
        str | None,
        Col(
            "",
            "`ab`: turns (the pair's processes live at once, each side's windows timed in turns "
            "with the whole machine) or alternate (one after the other, each with the whole host); "
            "duet in rows before 2026-11-28 (the pair's processes at once, pinned to the same CPUs).",
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
            "`ab` duet, in rows before 2026-11-28: the host CPUs this process and its partner were "
            'pinned to, e.g. "0,1" (null: not pinned).',
        ),
    ] = None
    ab_min_effect: Annotated[
        float | None,
        Col("1", "`ab`: the run's --min-effect, the smallest B/A difference its verdict calls (0.02: 2%)."),
    ] = None
    ab_min_pairs: Annotated[
        int | None, Col("", "`ab`: the run's --min-pairs, the fewest pairs before its rule may decide.")
    ] = None


@dataclass(frozen=True, kw_only=True)
class Axes:
    """What the cell is: its id and every axis (known before it runs)."""

    cell_id: CellId
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
    optimizer: Annotated[str, _axis("optimizer")]
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

    effective_cross_device_ops: EffectiveOp = None
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
    nodes: Annotated[
        int | None,
        Col(
            "machines",
            "Distinct machines the whole cluster spanned: every task, the chief and ps tasks "
            "included (1 for a local run; hosts counts the workers' machines only).",
        ),
    ] = None
    placement: Annotated[
        str | None,
        Col(
            "",
            "A real cluster's tasks and the host each ran on, e.g. 'chief 0@node1 ps 0@node1 "
            "worker 0@node2' (comma-separated); null for a local run.",
        ),
    ] = None
    link_gbps: Annotated[
        float | None,
        Col(
            "Gbit/s",
            "A cluster of several nodes: TCP throughput from the chief to the slowest other node, "
            "measured by the chief at the start of the run (the fastest of 3 transfers of 64 MiB "
            "through the run lease's connection); null on one node.",
        ),
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
            "(each tenant gets every core): the figure was measured on shared cores (the "
            "parameter-server coordinator is not counted).",
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
            "the cell and of its baseline, divided by replicas x workers."
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
            "Optimizer updates the loop ran in the cell (first call, seed_loss's, calibration, warm-up and timed "
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
        CI("Lower end of its 95% CI (Welch's t on the log process figures of both cells)."),
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
        _OVER_PROCESSES,
    ] = Estimate()
    tenant_alone_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "The co-tenant's throughput in its turns alone (as alone_examples_per_sec).",
            figure=True,
        ),
        _OVER_PROCESSES,
    ] = Estimate()
    tenant_together_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "The co-tenant's throughput while the TensorFlow side timed its own window in the same turn: "
            "its whole steps that ended before the TensorFlow window did.",
            figure=True,
        ),
        _OVER_PROCESSES,
    ] = Estimate()
    shared_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "The TensorFlow side's throughput together / alone, measured in turns of the same processes "
            "(relation shared in the ratios table): the share of its speed it keeps beside the co-tenant.",
            figure=True,
        ),
        CI("Lower end of its 95% CI: Student t over instances of the blocks' mean log ratio."),
    ] = Estimate()
    tenant_shared_ratio: Annotated[
        Estimate,
        Col("1", "The co-tenant's throughput together / alone, as shared_ratio.", figure=True),
        CI("Lower end of its 95% CI: as shared_ratio's."),
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
        _OVER_PROCESSES,
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
        CI("Lower end of the 95% CI of that peak over the peak processes (same log-t interval and scaling)."),
    ] = Estimate()
    peak_dtype: Annotated[
        str | None,
        Col(
            "",
            f"Compute dtype of the peak used for mfu: the cell's ({_in_words(COMPUTE_DTYPE.values())});"
            " float32 on GPUs runs as TF32 when build_info says tensor_float_32.",
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
            "Energy per example, median over processes: on GPUs, NVML total-energy counters of the "
            "GPUs the process uses (not every GPU of the machine); on CPU hosts, the RAPL package "
            "counters (/sys/class/powercap intel-rapl:N energy_uj, Intel and AMD), which count every "
            "process on the packages (the machine's energy while it trains); read around the process's "
            "own windows only (in turns, its own window turns, while the other members wait; back to "
            "back, its warm-up and timed windows) / the examples trained in them; "
            "co-tenants (who meter the same devices): their mean power / their aggregate "
            "examples_per_sec. Null where no counter is readable (no NVML; no powercap, or "
            "energy_uj readable by root only) and for multi-worker cells.",
            figure=True,
            median=True,
        ),
    ] = None
    gpu_watts: Annotated[
        float | None,
        Col(
            "W",
            "Mean power over the metered windows (joules / seconds) of the counters energy_j_per_example "
            "reads (on CPU hosts the CPU packages', not a GPU's), median over processes; "
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
    seed_loss: Annotated[
        float | None,
        Col(
            "",
            "Loss of update seed_updates from the run's seed (the first call's updates, then the rest, "
            "untimed, before any window): the same updates on the same data in every process of the "
            "cell and of a cell that differs only in precision (median over processes).",
            median=True,
        ),
    ] = None
    seed_updates: Annotated[
        int | None,
        Col("updates", "Updates before seed_loss: harness.spec.training.same_updates(steps_per_execution)."),
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
            "timed windows (a run in turns: in a process of its own after the turns, alone on the machine): "
            "the step whose shares the parts are, so both are "
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
    reduce_s: Annotated[
        float | None,
        Col(
            "s/update",
            "One cross-replica reduction of a scalar (what the loss and metric reductions each pay: "
            "latency, no bytes), alone; not one of the parts above; null with one replica.",
            median=True,
        ),
    ] = None
    ps_read_s: Annotated[
        float | None,
        Col(
            "s/update",
            "parameter_server: a worker's read of every trainable variable from the ps tasks, the "
            "reads concurrent as in a step, alone, per update (scheduled by the coordinator).",
            median=True,
        ),
    ] = None
    ps_update_s: Annotated[
        float | None,
        Col(
            "s/update",
            "parameter_server: a worker's update of every trainable variable on the ps tasks (a "
            "tensor of each one's size sent and added there), alone, per update.",
            median=True,
        ),
    ] = None
    profiled_step_s: Annotated[
        float | None,
        Col(
            "s/update",
            "GPU cells: one window of the cell's own training function (about 0.3 s of updates, after "
            "the timed windows; a run in turns: in a process of its own after the turns) under "
            "TensorFlow's profiler, per update; the "
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
            "parts_step_s, where it explains the step: at least half of it and more than the time no part "
            "explains (harness.formulas.breakdown); null when it does not, when the parts are not "
            "measured, or when a part's share is above 100% + harness.formulas.breakdown.NOISE (10%): a part cannot take "
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
class CellRow:
    """One row of the cells table: one cell of one run, as typed groups. Its columns are the
    groups' fields in order (:func:`harness.contract.columns.leaves`; a group adds no prefix, an
    :class:`Estimate` adds ``_ci_low`` and ``_ci_high``). Every group but ``cell`` may be empty
    while the row is assembled."""

    run: RunInfo = RunInfo()
    ab: AbInfo | None = None
    cell: Axes
    status: Annotated[Status | None, Col("", _STATUS)] = None
    """None only while a worker's row is assembled: every stored row has one."""
    reason: Reason = ""
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
            "then also covers run-to-run drift. Null with fewer than 2 processes and no history."
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
