"""Why a cell runs at the speed it does: the step-time breakdown's derived figures and a verdict.

Pure. The parts (:mod:`harness.worker.breakdown`; s per update, median over processes) are shares
of ``parts_step_s``, the cell's own update timed under the same conditions (:func:`reference_step`);
``overlap`` and ``bound`` as results/README.md defines them. A share above 100% + :data:`NOISE` is
a measurement error (:func:`excess`): no verdict, ``bound_reason`` names the part. Otherwise
``bound`` is the largest share where it explains the step (at least :data:`EXPLAINS` and more than
the remainder), with every share and its knob in ``bound_reason`` (:data:`BOUNDS`). On a GPU the
parts are a profiled window's (:func:`harness.formulas.timeline.split`; why: docs/explanation/gpus.md,
section 5) and the verdict is the largest (:data:`PROFILE_BOUNDS`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from harness.contract.records import Breakdown, CellRow, Status
from harness.spec.cell import Cell

PARTS = ("compute_s", "allreduce_s", "input_s", "dispatch_s")
"""The parts of an update (s per update)."""

REFERENCE = "parts_step_s"
"""The update timed alongside the parts (s per update): the denominator of their shares."""

NOISE = 0.10
"""How far a part's share may exceed 100% of the step before the breakdown is called inconsistent.

With one replica, compute is all of an update but its optimizer step, its batch taken from a
prefetched pipeline and its share of a call's dispatch: on an otherwise idle 2-core CPU its share
was 95-101% (CNN, batch 64). Its windows and the update's alternate, about 0.2 s each, median of
five, so what is left is load that changes between adjacent windows: 10% covers that on a machine
the suite has to itself. On one shared with other work (load at 3x the cores) such medians reached
138%, so the worker runs more rounds before it reports a part above this
(:data:`harness.worker.breakdown.PART_SETS`). A part that is not a piece of the update is off by
much more: k micro-batches or N replicas where the update has one is k or N times its share."""

EXPLAINS = 0.5
"""The least share of the step a part must take to be called its bound: below half, the other parts
or the unexplained remainder take more of the step than it does, and its knob would not be the
step's."""


def measurable(cell: Cell) -> bool:
    """Whether the parts of this cell's update can be timed: not for co-tenant cells (their parts
    would contend with the other tenants in unknown proportions). A parameter-server cell's are its
    costs across the link (:func:`harness.worker.breakdown.measure_parts`)."""
    return cell.tenants == 1


@dataclass(frozen=True)
class Bound:
    """One verdict: the part that dominates and what would help."""

    name: str
    part: str
    advice: str
    tries: tuple[str, ...] = ()
    """The axes to try next, in order (the first that suggests a value for the cell:
    :meth:`harness.spec.axes.Axis.next_values`)."""


BOUNDS: tuple[Bound, ...] = (
    Bound(
        "compute",
        "compute_s",
        "a faster device, lower precision (mixed_bfloat16 / mixed_float16), or more replicas on "
        "devices that add compute (logical CPU devices share one CPU's cores and add none)",
        ("precision", "batch"),
    ),
    Bound(
        "communication",
        "allreduce_s",
        "more accumulation steps or a larger per-replica batch (fewer all-reduces per example), "
        "or another cross-device op / communication (compare them with --sweep collectives)",
        ("accum_steps", "batch"),
    ),
    Bound(
        "input",
        "input_s",
        "a faster input pipeline (cache, prefetch, parallel map) or synthetic data to confirm",
        ("batch",),
    ),
    Bound(
        "dispatch",
        "dispatch_s",
        "more steps_per_execution (one host dispatch per call of that many updates) or a larger "
        "batch per update",
        ("steps_per_execution", "batch"),
    ),
)


PROFILE_BOUNDS: tuple[Bound, ...] = (
    Bound(
        "device",
        "device_s",
        "lower precision (mixed_bfloat16 / mixed_float16), XLA (--jit-compile on: fused kernels), "
        "or a faster GPU: the GPU is busy with the model's kernels",
        ("precision", "xla"),
    ),
    Bound(
        "communication",
        "collective_s",
        "more accumulation steps or a larger per-replica batch (fewer all-reduces per example), or "
        "another cross-device op",
        ("accum_steps", "batch"),
    ),
    Bound(
        "input",
        "input_wait_s",
        "a faster input pipeline (cache, prefetch, parallel map): the GPU waits for the next batch",
        ("batch",),
    ),
    Bound(
        "host",
        "host_s",
        "more steps_per_execution, a larger batch, or XLA (--jit-compile on): the GPU waits for "
        "the host to launch its kernels",
        ("steps_per_execution", "xla", "batch"),
    ),
)
"""The verdicts of a profiled GPU update (:func:`harness.formulas.timeline.split`)."""


BOUND_BY_NAME = {b.name: b for b in (*BOUNDS, *PROFILE_BOUNDS)}
"""Every verdict by its name (``communication`` is one bound in either set, with the same tries)."""


def _num(value: float | None) -> float | None:
    """A part as a float, None when unknown or not finite."""
    return value if value is not None and math.isfinite(value) else None


def reference_step(b: Breakdown) -> float | None:
    """The step (s per update) a row's parts are shares of: ``parts_step_s``; for rows stored before
    that column existed, ``step_s`` (what their verdict was computed against); None if neither."""
    step = _num(b.parts_step_s)
    return (_num(b.step_s) if step is None else step) or None


def parts_of(b: Breakdown, columns: tuple[str, ...] = PARTS) -> dict[str, float] | None:
    """The row's parts in ``columns`` (s per update; default: the four timed alone, :data:`PARTS`),
    by column name, when every one is known, else None."""
    parts = {c: _num(getattr(b, c)) for c in columns}
    return {k: v for k, v in parts.items() if v is not None} if None not in parts.values() else None


def shares(step_s: float, parts: Mapping[str, float], bounds: tuple[Bound, ...] = BOUNDS) -> dict[str, float]:
    """Each bound's part as a fraction of the step (both s per update), by bound name."""
    return {b.name: parts[b.part] / step_s for b in bounds}


def excess(
    step_s: float, parts: Mapping[str, float], noise: float = NOISE, bounds: tuple[Bound, ...] = BOUNDS
) -> dict[str, float]:
    """The parts (by bound name) whose share of the step is above 1 + ``noise``, with that share:
    a part that took longer than the whole update it belongs to (empty when the breakdown is
    consistent)."""
    return {name: share for name, share in shares(step_s, parts, bounds).items() if share > 1 + noise}


def verdict(
    step_s: float, parts: Mapping[str, float], bounds: tuple[Bound, ...] = BOUNDS
) -> tuple[str | None, str]:
    """(bound, reason) from the step time and its four parts (seconds per update); bound None when a
    part exceeds the step (:func:`excess`), or when the largest part explains less than
    :data:`EXPLAINS` of the step or no more than the time no part explains (the step less the parts'
    sum). The reason says which."""
    share = shares(step_s, parts, bounds)
    listed = ", ".join(f"{name} {s:.0%}" for name, s in share.items())
    over = (sum(parts.values()) - step_s) / step_s
    rest = f" (overlap {over:+.0%})" if over >= 0 else f", unexplained {-over:.0%}"
    figures = f"of the {step_s * 1e3:.3g} ms step, {listed}{rest}"
    bad = excess(step_s, parts, bounds=bounds)
    if bad:
        named = " and ".join(f"{name} ({s:.0%})" for name, s in bad.items())
        return None, (
            f"no verdict: {named} timed alone took longer than the whole update it was "
            f"timed with (more than 100% + {NOISE:.0%} for timing noise), so the parts "
            f"are not pieces of that update; {figures}"
        )
    top = max(bounds, key=lambda b: share[b.name])
    if share[top.name] <= -over:
        return None, f"no part bounds it: more of the step is unexplained than any part takes; {figures}"
    if share[top.name] < EXPLAINS:
        return None, f"no part bounds it: the largest, {top.name}, takes less than half the step; {figures}"
    return top.name, f"{top.name}-bound: {figures}; try {top.advice}"


PART_LABELS = {
    "compute_s": "compute",
    "allreduce_s": "all-reduce",
    "input_s": "input",
    "dispatch_s": "dispatch",
    "device_s": "device",
    "collective_s": "collectives",
    "input_wait_s": "input wait",
    "host_s": "host",
}
"""Every part's column, as reports name it."""


@dataclass(frozen=True)
class Measured:
    """A row's breakdown as measured: the step its parts are shares of (s per update), the parts
    (s per update, by column) and the verdicts that apply to them."""

    step_s: float
    parts: Mapping[str, float]
    bounds: tuple[Bound, ...]

    @property
    def profiled(self) -> bool:
        """Whether the parts come from a profiled GPU window (else: timed alone)."""
        return self.bounds is PROFILE_BOUNDS

    def shares(self) -> dict[str, float]:
        return shares(self.step_s, self.parts, self.bounds)

    def excess(self) -> dict[str, float]:
        return excess(self.step_s, self.parts, bounds=self.bounds)


def measured(b: Breakdown) -> Measured | None:
    """The row's profiled GPU parts with ``profiled_step_s`` where all are known, else its parts
    timed alone with :func:`reference_step`, else None."""
    profiled = parts_of(b, tuple(x.part for x in PROFILE_BOUNDS))  # they add up to profiled_step_s
    profiled_step = _num(b.profiled_step_s)
    if profiled is not None and profiled_step:
        return Measured(profiled_step, profiled, PROFILE_BOUNDS)
    parts, reference = parts_of(b), reference_step(b)
    if parts is not None and reference:
        return Measured(reference, parts, BOUNDS)
    return None


def derived(cell: Cell, row: CellRow) -> Breakdown:
    """The row's breakdown with step_s (an ok row), and overlap, bound and bound_reason when all
    four parts and the step they were timed with are known: a profiled GPU update's parts
    (:data:`PROFILE_BOUNDS`) where the row has them, else the parts timed alone."""
    eps, b = row.examples_per_sec.value, row.breakdown
    if row.status != Status.OK or not eps:
        return b
    b = replace(b, step_s=cell.effective_batch / eps)
    m = measured(b)
    if m is None or (not m.profiled and _num(b.parts_step_s) is None):
        return b
    bound, reason = verdict(m.step_s, m.parts, m.bounds)
    return replace(b, overlap=(sum(m.parts.values()) - m.step_s) / m.step_s, bound=bound, bound_reason=reason)
