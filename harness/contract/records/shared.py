"""What several tables share: :class:`Status`, the run's columns (:class:`RunInfo`), where a row
was measured (:class:`Machine`), a cell axis's column (:func:`axis_column`), and each column that
more than one table has (an ``Annotated`` alias: one type, unit and description wherever it is
used). Pure: no pyarrow, no pandas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated

from harness.contract.columns import Col
from harness.spec.axes import AXIS_BY_NAME


def axis_column(name: str) -> Col:
    """A cell axis's column: its unit and description from its descriptor (:mod:`harness.spec.axes`)."""
    axis = AXIS_BY_NAME[name]
    return Col(axis.unit, axis.column_doc)


class Status(StrEnum):
    """What became of a cell (or a collectives topology); :attr:`meaning` says it in words."""

    OK = "ok"
    UNSUPPORTED = "unsupported"
    FAILED = "failed"
    INVALID = "invalid"
    NOT_MEASURED = "not measured"

    @property
    def meaning(self) -> str:
        """What the status says of a cell (the cells table's ``status`` column lists them)."""
        return _MEANINGS[self]


_MEANINGS: Mapping[Status, str] = MappingProxyType(
    {
        Status.OK: "measured and checked",
        Status.UNSUPPORTED: "TensorFlow cannot run it correctly here: a rule of harness.spec.rules, "
        "with the reason",
        Status.FAILED: "crashed or timed out; the reason names the task and the phase",
        Status.INVALID: "ran, but an integrity check failed: the row carries no figure of any kind",
        Status.NOT_MEASURED: "runnable, but the run's budget was spent before any process of it "
        "started; a run that stopped writes no such row: it resumes",
    }
)


RunId = Annotated[
    str,
    Col(
        "",
        "Id of the `python -m harness run` (or `ab`, `nightly`) invocation that wrote the row (UTC "
        "start time + random suffix).",
    ),
]
Timestamp = Annotated[str, Col("ISO 8601 UTC", "When the row was written.")]
SuiteVersion = Annotated[str, Col("", "harness version and git commit of the suite that measured.")]
Resumes = Annotated[
    int | None,
    Col(
        "",
        "Sessions that resumed the run from its journal after it was stopped before writing its "
        "rows (`run --resume`; 0: measured in one session; null: an `ab` or an older run).",
    ),
]
"""The ``resumes`` column (:class:`RunInfo`'s); the collectives table, which has none, shares the
other three columns one by one."""


MachineName = Annotated[
    str | None,
    Col(
        "",
        "The machine's name: `run --machine NAME`, else `<CPU model> <N> cores` or the GPU's name, "
        "plus machine_id.",
    ),
]


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """The run that wrote the row: the cells, ratios and costs tables' first columns."""

    run_id: RunId = ""
    timestamp: Timestamp = ""
    suite_version: SuiteVersion = ""
    resumes: Resumes = None
    machine: MachineName = None
    machine_id: Annotated[
        str | None,
        Col(
            "",
            "6 hex digits of a hash of machine_facts: runs with equal facts have equal ids (null in older rows).",
        ),
    ] = None
    instance_id: Annotated[
        str | None,
        Col(
            "",
            "6 hex digits of a hash of the host instance (the VM's DMI product UUID, else its boot id), "
            "not part of the machine's identity: runs of one machine with other instance ids are "
            "instances of one type (null: not recorded).",
        ),
    ] = None
    machine_facts: Annotated[
        str | None,
        Col(
            "JSON",
            "The facts that tell machines apart (harness.contract.machine.MachineFacts): CPU model, "
            "family/model/stepping, flags, usable cores, cgroup CPU quota, caches, memory; GPU names, "
            "memory, driver; older rows read with the CPU model, cores and GPU they hold, marked partial.",
        ),
    ] = None
    protocol_version: Annotated[
        int | None,
        Col(
            "",
            "Measurement-protocol version (harness.contract.machine.PROTOCOL_VERSION): runs compare "
            "across machines only when it agrees.",
        ),
    ] = None


CellId = Annotated[
    str,
    Col(
        "",
        "Stable id of the cell: "
        "model/strategy[option]/rRwW[pP][tT]/bB/accK/loop/speS/precision/data/scaling (pP: ps "
        "tasks, parameter_server only; tT: co-tenant processes, more than one only; gbB instead of "
        "bB for strong scaling).",
    ),
]
"""The ``cell_id`` column of the cells, windows and nightly tables."""

AbSide = Annotated[
    str | None,
    Col(
        "",
        "`ab`: A or B, the side (interpreter and settings) whose process measured the row (the "
        "cells table's fingerprint, tf_version and env say which); null for other runs.",
    ),
]
"""The ``ab_side`` column of the cells and windows tables."""

Reason = Annotated[str, Col("", "Why the row is not ok (empty when ok).")]
"""The ``reason`` column of the cells and collectives tables."""

RunFingerprint = Annotated[
    str | None, Col("", "Hardware/software fingerprint the run's processes reported (as in the cells table).")
]
"""The ``fingerprint`` column of the tables of a whole run (ratios, costs) or topology (collectives)."""

EffectiveOp = Annotated[
    str | None,
    Col(
        "",
        "What the strategy object really used, e.g. CollectiveAllReduce(RING); none for strategies "
        "without one.",
    ),
]
"""The cells table's ``effective_cross_device_ops`` and the collectives table's ``effective_op``."""

# Machine's columns that the collectives and nightly tables repeat:
DeviceKind = Annotated[str | None, Col("", "GPU or CPU.")]
DeviceName = Annotated[str | None, Col("", "GPU model, or CPU model for CPU runs.")]
HostCpu = Annotated[str | None, Col("", "CPU model name.")]
HostCores = Annotated[int | None, Col("cores", "Logical cores the OS reports.")]
TfVersion = Annotated[str | None, Col("", "TensorFlow version.")]


@dataclass(frozen=True, kw_only=True)
class Machine:
    """Where the cell ran: device, host, threads, software, environment."""

    device_kind: DeviceKind = None
    device_name: DeviceName = None
    host_cpu: HostCpu = None
    host_cores: HostCores = None
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
    tf_version: TfVersion = None
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
