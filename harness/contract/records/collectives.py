"""The collectives table's row (:class:`CollectiveRow`): one all-reduce payload of one topology
(``run --sweep collectives``). Pure: no pyarrow, no pandas.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from harness.contract.columns import Col
from harness.contract.records.shared import Status


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
