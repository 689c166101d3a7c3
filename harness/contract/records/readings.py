"""The cells table's groups of what a process read besides its throughput: energy
(:class:`Energy`), GPU memory (:class:`Memory`), the integrity checks (:class:`Checks`) and where an
update's time goes (:class:`Breakdown`). Pure: no pyarrow, no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import Col


@dataclass(frozen=True, kw_only=True)
class Energy:
    """Energy, where a counter exists."""

    energy_j_per_example: Annotated[
        float | None,
        Col(
            "J/example",
            "Energy per example, median over processes: the joules of NVML's total-energy counters of "
            "the process's GPUs (not every GPU of the machine), or on CPU hosts of the RAPL package "
            "counters (/sys/class/powercap intel-rapl:N energy_uj, Intel and AMD: every process on the "
            "packages), read around the process's own windows only (in turns, its window turns, while "
            "the others wait; back to back, its warm-up and timed windows), / the examples trained in "
            "them; co-tenants (metering the same devices): their mean power / their aggregate "
            "examples_per_sec. Null where no counter is readable (no NVML; no powercap, or energy_uj "
            "root-only) and for multi-worker cells.",
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
            "The cell's own update (its training function as in the timed windows: input, all-reduce "
            "and optimizer step included), the step whose shares the parts below are, timed under the "
            "same conditions: in the same process and rounds (one window of it, then one of each part; "
            "five rounds, up to fifteen while a part exceeds it by more than "
            "harness.formulas.breakdown.NOISE; median window), after the timed windows (a run in turns: "
            "in a process of its own after the turns, alone on the machine); null where the parts are "
            "not measured.",
            median=True,
        ),
    ] = None
    compute_s: Annotated[
        float | None,
        Col(
            "s/update",
            "The update's forward and backward passes as its training function runs them (the same "
            "replica function: accum_steps micro-batches of per_replica_batch, gradients summed locally, "
            "under strategy.run on every replica, one update per in-graph loop iteration) with no "
            "cross-replica reduction, optimizer step or input pipeline (one update's batch already on "
            "the devices), median over the processes that measured it; null where it cannot be "
            "isolated (parameter_server).",
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
            "TensorFlow's profiler, per update; the four parts below add up to it exactly "
            "(harness.formulas.timeline). It holds the profiler's overhead, so it can exceed step_s; "
            "null on CPUs and where nothing was recorded on the GPU (bound_reason says why).",
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
            "parts_step_s where it explains the step (at least half of it, and more than the time no "
            "part explains: harness.formulas.breakdown); null when it does not, when the parts are not "
            "measured, or when a part's share is above 100% + harness.formulas.breakdown.NOISE (10%): "
            "no part can take longer than its update (bound_reason says which). GPU cells: device, "
            "communication, input or host, the largest of device_s, collective_s, input_wait_s and "
            "host_s (host: the GPU waits for the host to launch its kernels; raise steps_per_execution "
            "or the batch, or try --jit-compile on).",
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
