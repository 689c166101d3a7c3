"""The cells table's groups on how its figure was measured: the processes behind it and how far
they agree (:class:`Spread`), how they were timed (:class:`Timing`) and what they ran on
(:class:`Execution`). Pure: no pyarrow, no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import Col
from harness.contract.records.shared import EffectiveOp


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
            "the parameter-server loop, the jit_compile of each update's step tf.function; for fit, the "
            "one Keras built its step function with (the loop that reads the input is never compiled: "
            "XLA has no IteratorGetNext). The suite asks for the same value for both loops (false so "
            "far; never Keras's auto, which turns XLA on for a GPU model built outside any strategy "
            "scope and off inside one). Null where no process reported it (unsupported, failed) or "
            "they disagree; older rows hold false.",
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
