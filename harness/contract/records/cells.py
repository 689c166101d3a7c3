"""The cells table's row (:class:`CellRow`): one cell of one run, a frozen dataclass of typed
groups: the run, the ``ab`` comparison (:class:`AbInfo`), what the cell is (:class:`Axes`), its
figure, the groups of the modules ``timing``, ``efficiency``, ``tenancy`` and ``readings``, and the
machine. Pure: no pyarrow, no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import CI, Col, Estimate
from harness.contract.records.efficiency import Efficiency, Flops, Updates, Utilization
from harness.contract.records.readings import Breakdown, Checks, Energy, Memory
from harness.contract.records.shared import AbSide, CellId, Machine, Reason, RunInfo, Status
from harness.contract.records.shared import axis_column as _axis
from harness.contract.records.tenancy import Foreign, Tenancy
from harness.contract.records.timing import Execution, Spread, Timing

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
            "duet in older rows (the pair's processes at once, pinned to the same CPUs).",
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
            "`ab` duet, in older rows: the host CPUs this process and its partner were "
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
