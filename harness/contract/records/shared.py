"""What several tables share: :class:`Status`, the run's columns (:class:`RunInfo`, :data:`Resumes`),
where a row was measured (:class:`Machine`), and a cell axis's column (:func:`axis_column`). Pure:
no pyarrow, no pandas.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from harness.contract.columns import Col
from harness.spec.axes import AXIS_BY_NAME


def axis_column(name: str) -> Col:
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
