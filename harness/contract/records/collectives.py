"""The collectives table's row (:class:`CollectiveRow`): one all-reduce payload of one topology
(``run --sweep collectives``). Pure: no pyarrow, no pandas. A flat TypedDict because its rows are
assembled piecewise: a topology's columns (:func:`harness.results.collectives.topology_columns`),
then each payload's figures over the processes, then the run's columns
(:mod:`harness.launch.sweep.collectives`); every field may be absent until then. It has no ``resumes``,
so it shares :class:`~harness.contract.records.shared.RunInfo`'s other columns one by one."""

from __future__ import annotations

from typing import Annotated, TypedDict

from harness.contract.columns import Col
from harness.contract.records.shared import (
    DeviceKind,
    DeviceName,
    EffectiveOp,
    HostCores,
    MachineName,
    Reason,
    RunFingerprint,
    RunId,
    Status,
    SuiteVersion,
    TfVersion,
    Timestamp,
    axis_column,
)
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.collectives import GRADIENT_SHAPES
from harness.spec.strategies import ALLREDUCE_STRATEGIES, STRATEGIES

_TIMED = [STRATEGIES[name] for name in ALLREDUCE_STRATEGIES]
"""The strategies whose all-reduce the collectives sweep times: those with an option axis."""


def _strategy_doc() -> str:
    """The ``strategy`` column: each timed strategy, its option axis and what its all-reduce spans."""
    each = [f"{s.name} ({s.option_axis} across {s.device_axis})" for s in _TIMED]
    return f"The strategy whose all-reduce is timed: {' or '.join(each)}."


def _op_doc() -> str:
    """The ``op`` column: each option axis, the strategy it applies to and its values."""
    axes = [AXIS_BY_NAME[str(s.option_axis)] for s in _TIMED]
    each = [f"{a.name} ({', '.join(a.applies_to)}: {', '.join(a.choices)})" for a in axes]
    return f"Requested {' or '.join(each)}."


class CollectiveRow(TypedDict, total=False):
    """One row of the collectives table: one all-reduce payload of one topology (``run --sweep collectives``)."""

    run_id: RunId
    timestamp: Timestamp
    suite_version: SuiteVersion
    fingerprint: RunFingerprint
    machine: MachineName
    machine_id: Annotated[str | None, Col("", "The machine's id (as the cells table's machine_id).")]
    device_kind: DeviceKind
    device_name: DeviceName
    host_cores: HostCores
    tf_version: TfVersion
    status: Annotated[
        Status,
        Col(
            "",
            "ok (measured, sum checked), unsupported, failed or invalid (the all-reduce returned a "
            "wrong sum).",
        ),
    ]
    reason: Reason
    strategy: Annotated[str, Col("", _strategy_doc())]
    op: Annotated[str, Col("", _op_doc())]
    effective_op: EffectiveOp
    replicas: Annotated[int, axis_column("replicas")]
    workers: Annotated[int, axis_column("workers")]
    devices: Annotated[int, Col("devices", "n = replicas x workers, the all-reduce's participants.")]
    payload: Annotated[
        str,
        Col(
            "",
            "bytes (one float32 tensor of the row's size, the size sweep) or a model's gradient set "
            f"({', '.join(GRADIENT_SHAPES)}: one tensor per trainable variable, as the optimizer hands "
            "them over).",
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
