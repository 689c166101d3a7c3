"""The cells table's groups on what the figure is worth: scaling efficiency
(:class:`Efficiency`), the model's FLOPs (:class:`Flops`), optimizer updates and all-reduces
(:class:`Updates`), the run's peak and MFU (:class:`Utilization`). Pure: no pyarrow, no pandas."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import CI, Col, Estimate
from harness.spec.axes import COMPUTE_DTYPE


def _in_words(values: Iterable[str]) -> str:
    """``a, b or c``."""
    *rest, last = values
    return f"{', '.join(rest)} or {last}" if rest else last


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
            "gradients (none for the first layer) of convolutions and matmuls, 2 FLOPs per multiply-add "
            "(rounded); counted by the worker from the traced step (flops_source 'counted': "
            "harness.formulas.flops), else the built-in model's analytic count; null when neither is "
            "known (no MFU).",
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
            "Cross-replica reductions per optimizer update, counted: every top-level reduce/batch_reduce "
            "call of the strategy's cross-device ops traced into the training function: the gradients' "
            "(micro-batch phase x accum_steps + apply phase), plus, in the ctl loop, the loss's, one per "
            "call of steps_per_execution updates (so 1 + 1/steps_per_execution on several replicas "
            "without accumulation); not Keras fit's handling of its logs. 0 with one device (default, "
            "one_device, or mirrored with one replica, whose reduce TensorFlow skips).",
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
            "Optimizer updates the loop ran in the cell (first call, seed_loss's, calibration, warm-up "
            "and timed windows), counted by the training function's caller (parameter_server: the "
            "coordinator).",
        ),
    ] = None
    optimizer_iterations: Annotated[
        int | None,
        Col(
            "updates",
            "optimizer.iterations after the timed windows (before the breakdown): equal to updates_run "
            "(checked) for synchronous strategies; lower under parameter_server, where Keras 3 "
            "increments it by a read then an assign on the ps and concurrent workers lose increments "
            "(the weight updates themselves are atomic assign_sub ops).",
        ),
    ] = None


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
