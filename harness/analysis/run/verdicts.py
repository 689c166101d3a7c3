"""``python -m harness verify``: do cells that must compute the same thing agree?
(docs/explanation/accumulation.md, "verify": the equivalence groups, their reference cell and the
tolerance). Each cell trains ``updates`` optimizer updates from the same seed and data order (no
timing); its final loss and weights' change are compared with its group's reference cell within
``TOLERANCE[precision]``; each mixed-precision cell also against its float32 twin at
:data:`harness.analysis.run.numerics.ACROSS`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.analysis.run.numerics import ACROSS
from harness.analysis.run.tables import num, render_table
from harness.contract.events import ProcessRow
from harness.contract.records import CellRow, Status
from harness.spec.axes import COMPUTES, key_axes
from harness.spec.cell import Cell
from harness.spec.models import MODELS

TOLERANCE = {"float32": 1e-5, "mixed_bfloat16": 2e-2, "mixed_float16": 1e-2}


def split(cell: Cell) -> tuple[int, int]:
    """How an update's batch is split: (replicas in sync, micro-batches); (0, 0) for a model whose
    training does not depend on it."""
    info = MODELS.get(cell.model)
    return (cell.devices, cell.accum_steps) if info is not None and info.split_sensitive else (0, 0)


EquivalenceKey = tuple[object, ...]
"""What must compute the same (:func:`equivalence_key`)."""


def equivalence_key(cell: Cell) -> EquivalenceKey:
    """What must compute the same: the axes that decide the arithmetic (model, data, loss,
    precision, XLA, whose fused kernels round differently: :data:`harness.spec.axes.COMPUTES`) and
    the effective batch; and for a model whose training depends on the batch's split
    (:attr:`harness.spec.models.ModelInfo.split_sensitive`), the split too."""
    axes = tuple(str(getattr(cell, a.name)) for a in key_axes(COMPUTES))
    return (*axes, cell.effective_batch, split(cell))


def synchronous(cell: Cell) -> bool:
    """Whether the cell's training is deterministic SGD on its effective batch (all but
    parameter_server on several workers)."""
    return cell.kind.synchronous_at(cell.workers)


ASYNCHRONOUS_NOTE = "not compared: asynchronous updates"


@dataclass(frozen=True)
class Numerics:
    """Where a cell's worker trained and how TensorFlow computed there, as the worker reported it.

    ``device``: its kind and name ("GPU NVIDIA H100 80GB HBM3"); ``op_determinism``: TensorFlow's op
    determinism was on (None: not reported); ``tensor_float_32``: float32 matmuls and convolutions
    could run as TF32 (TensorFlow allowed it, NVIDIA_TF32_OVERRIDE was not 0, a GPU of compute
    capability >= 8.0; None: not reported)."""

    device: str
    op_determinism: bool | None
    tensor_float_32: bool | None


def numerics_of(row: CellRow, report: ProcessRow) -> Numerics | None:
    """What a verify worker's row and report say it ran with (None when it carries no device: it
    failed before its facts were collected)."""
    machine = row.machine
    if machine is None or not machine.device_kind:
        return None
    tf32 = json.loads(machine.build_info or "{}").get("tensor_float_32")
    return Numerics(
        f"{machine.device_kind} {machine.device_name or ''}".strip(),
        report.get("op_determinism"),
        None if tf32 is None else bool(tf32),
    )


def numerics_text(n: Numerics) -> str:
    """E.g. "op determinism on, TF32 off; GPU NVIDIA H100 80GB HBM3"."""

    def flag(on: bool | None) -> str:
        return "?" if on is None else ("on" if on else "off")

    return f"op determinism {flag(n.op_determinism)}, TF32 {flag(n.tensor_float_32)}; {n.device}"


@dataclass(frozen=True)
class Outcome:
    """One cell's result: status ok/invalid/failed/unsupported, and for ok ones loss and weights;
    ``numerics``: what its worker ran with (None: no worker reported it)."""

    cell: Cell
    status: str
    reason: str = ""
    final_loss: float | None = None
    weights_digest: str = ""
    weights_path: str = ""
    numerics: Numerics | None = None


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reference: str
    loss_rel: float | None
    weights_rel: float | None
    agrees: bool | None
    """True/False against the reference; None when not compared (not ok, alone, asynchronous)."""
    note: str = ""
    across: bool = False
    """Against the float32 twin (:data:`ACROSS`), not the equivalence group's reference."""
    tolerance: float | None = None
    """What it was judged against (None: not judged)."""


def relative_difference(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """||a - b||_2 / ||b||_2 over all arrays concatenated."""
    fa, fb = (np.concatenate([np.ravel(x).astype(np.float64) for x in xs]) for xs in (a, b))
    return float(np.linalg.norm(fa - fb)) / max(float(np.linalg.norm(fb)), 1e-30)


def load_update(path: str) -> list[np.ndarray]:
    """What training changed: after - before, per weight, from a worker's .npz."""
    with np.load(path) as f:
        n = len(f.files) // 2
        return [f[f"after_{i}"].astype(np.float64) - f[f"before_{i}"] for i in range(n)]


def judge(
    outcomes: Sequence[Outcome], weights: Callable[[str], Sequence[np.ndarray]] = load_update
) -> list[Verdict]:
    """Compare every ok outcome with its group's reference, then every ok mixed-precision one with
    its float32 twin where it ran (a Verdict with ``across``, judged against :data:`ACROSS`); pure,
    given ``weights``, which maps a weights path to what training changed."""
    ok = [o for o in outcomes if o.status == Status.OK and synchronous(o.cell)]
    refs: dict[EquivalenceKey, Outcome] = {}
    # the reference order: fewest devices, no accumulation, the reference strategy, the ctl loop
    for o in sorted(
        ok,
        key=lambda o: (o.cell.devices, o.cell.accum_steps, not o.cell.kind.reference, o.cell.loop != "ctl"),
    ):
        refs.setdefault(equivalence_key(o.cell), o)
    verdicts = []
    for o in outcomes:
        ref = refs.get(equivalence_key(o.cell))
        if o.status == Status.OK and not synchronous(o.cell):
            verdicts.append(Verdict(o, "", None, None, None, ASYNCHRONOUS_NOTE))
        elif o.status != Status.OK or ref is None or ref is o:
            verdicts.append(Verdict(o, ref.cell.id if ref else "", None, None, None))
        else:
            verdicts.append(_compared(o, ref, TOLERANCE[o.cell.precision], weights))
    by_id = {o.cell.id: o for o in ok}  # a mixed-precision cell's float32 twin: its cell in float32
    twins = (
        (o, by_id.get(replace(o.cell, precision="float32").id)) for o in ok if o.cell.precision != "float32"
    )
    return verdicts + [
        _compared(o, f, ACROSS.get((o.cell.precision, o.cell.optimizer)), weights) for o, f in twins if f
    ]


UNJUDGED_NOTE = "vs float32: not judged (no tolerance across precisions for this optimizer)"


def _compared(
    o: Outcome, ref: Outcome, tolerance: float | None, weights: Callable[[str], Sequence[np.ndarray]]
) -> Verdict:
    """``o`` against ``ref``: the relative differences of their final losses and weight changes,
    judged against ``tolerance`` (None: shown, not judged)."""
    loss, ref_loss = o.final_loss, ref.final_loss
    assert loss is not None and ref_loss is not None, "an ok outcome has its final loss"
    loss_rel = abs(loss - ref_loss) / max(abs(ref_loss), 1e-30)
    weights_rel = relative_difference(weights(o.weights_path), weights(ref.weights_path))
    agrees = None if tolerance is None else loss_rel <= tolerance and weights_rel <= tolerance
    note = "" if tolerance is not None else UNJUDGED_NOTE
    return Verdict(
        o, ref.cell.id, loss_rel, weights_rel, agrees, note, o.cell.precision != ref.cell.precision, tolerance
    )


def numerics_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """The table's heading: what the cells ran with, one line per distinct :class:`Numerics` with
    its count of cells (one line when all agree, as they do unless the machine's devices differ)."""
    counts = Counter(numerics_text(o.numerics) for o in outcomes if o.numerics is not None)
    if not counts:
        return ["numerics: not reported (no cell's worker got as far as its devices)"]
    return [f"numerics: {text} ({n} cell{'s' * (n != 1)})" for text, n in sorted(counts.items())]


HEADER: tuple[str, ...] = ("effective batch", "cell", "status", "final loss", "weights digest")
HEADER += ("loss rel", "weights rel", "verdict")


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    """Rows grouped by equivalence group, each with its comparison against the reference, under
    :func:`numerics_lines`."""
    lines = [HEADER]
    for v in sorted(verdicts, key=lambda v: equivalence_key(v.outcome.cell)):
        o = v.outcome
        if v.note:
            verdict = v.note
        elif v.agrees is None:
            verdict = (
                "reference"
                if o.status == Status.OK and v.reference == o.cell.id
                else ("alone" if o.status == Status.OK else f"{o.status}: {o.reason[:70]}")
            )
        else:
            verdict = ("vs float32: " if v.across else "") + (
                "agrees" if v.agrees else f"DISAGREES (tolerance {v.tolerance:g})"
            )
        lines.append(
            (
                f"{o.cell.model} {o.cell.precision} {o.cell.effective_batch}",
                o.cell.id,
                o.status,
                num(o.final_loss, ".7f"),
                o.weights_digest or "-",
                num(v.loss_rel, ".1e"),
                num(v.weights_rel, ".1e"),
                verdict,
            )
        )
    heading = numerics_lines([v.outcome for v in verdicts if not v.across])
    return "\n".join([*heading, "", render_table(lines[0], lines[1:], rule=False)])
