"""``python -m harness verify``: do cells that must compute the same thing agree?

Each cell trains ``updates`` optimizer updates from the same seed and data order in its own worker
(no timing), then its final loss and weights are compared with a reference cell of its
**equivalence group**: same model, data, precision and effective batch (examples per update =
per_replica_batch x replicas x workers x accum_steps). With SGD these must agree whatever the
strategy, replica count, cross-device op, loop or accumulation split; only float summation order
differs. A model whose training depends on how the batch is split over replicas and micro-batches
(BatchNorm, dropout: ``ModelInfo.split_sensitive``) is compared only within one split (other
strategies, loops and cross-device ops). The reference is the group's simplest ok cell (fewest devices, no accumulation, default
strategy, ctl loop). Parameter-server cells with several workers update asynchronously (each
worker applies its gradients on its own, from weights others may have changed since): nothing
must agree with them, so they are trained and checked but not compared.

Tolerance (relative; documented in docs/explanation/accumulation.md): ``|loss - loss_ref| / |loss_ref|`` and, on what training
changed, ``||(w - w0) - (w_ref - w0)||_2 / ||w_ref - w0||_2`` over all weights (w0: the common
initial weights) must both be at most ``TOLERANCE[precision]``. Comparing the change rather than the
weights keeps the shared initial weights from hiding a wrong gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.tables import render_table
from harness.contract.records import Status
from harness.spec.cell import Cell
from harness.spec.models import MODELS

TOLERANCE = {"float32": 1e-5, "mixed_bfloat16": 2e-2, "mixed_float16": 1e-2}


def split(cell: Cell) -> tuple[int, int]:
    """How an update's batch is split: (replicas in sync, micro-batches); (0, 0) for a model whose
    training does not depend on it."""
    info = MODELS.get(cell.model)
    return (cell.devices, cell.accum_steps) if info is not None and info.split_sensitive else (0, 0)


def equivalence_key(cell: Cell) -> tuple[str, str, str, int, tuple[int, int]]:
    """What must compute the same: model, data, precision and effective batch; and for a model
    whose training depends on the batch's split (:attr:`harness.spec.models.ModelInfo.split_sensitive`),
    the split too."""
    return (cell.model, cell.data, cell.precision, cell.effective_batch, split(cell))


def synchronous(cell: Cell) -> bool:
    """Whether the cell's training is deterministic SGD on its effective batch (all but
    parameter_server on several workers)."""
    return cell.kind.synchronous_at(cell.workers)


ASYNCHRONOUS_NOTE = "not compared: asynchronous updates"


def _simplicity(cell: Cell) -> tuple[int, int, bool, bool]:
    """The reference order: fewest devices, no accumulation, the reference strategy (the default
    strategy), the ctl loop."""
    return (cell.devices, cell.accum_steps, not cell.kind.reference, cell.loop != "ctl")


@dataclass(frozen=True)
class Outcome:
    """One cell's result: status ok/invalid/failed/unsupported, and for ok ones loss and weights."""

    cell: Cell
    status: str
    reason: str = ""
    final_loss: float | None = None
    weights_digest: str = ""
    weights_path: str = ""


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reference: str
    loss_rel: float | None
    weights_rel: float | None
    agrees: bool | None
    """True/False against the reference; None when not compared (not ok, alone, asynchronous)."""
    note: str = ""


def relative_difference(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """||a - b||_2 / ||b||_2 over all arrays concatenated."""
    fa = np.concatenate([np.ravel(x).astype(np.float64) for x in a])
    fb = np.concatenate([np.ravel(x).astype(np.float64) for x in b])
    return float(np.linalg.norm(fa - fb)) / max(float(np.linalg.norm(fb)), 1e-30)


def load_update(path: str) -> list[np.ndarray]:
    """What training changed: after - before, per weight, from a worker's .npz."""
    with np.load(path) as f:
        n = len(f.files) // 2
        return [f[f"after_{i}"].astype(np.float64) - f[f"before_{i}"] for i in range(n)]


def judge(
    outcomes: Sequence[Outcome], weights: Callable[[str], Sequence[np.ndarray]] = load_update
) -> list[Verdict]:
    """Compare every ok outcome with its group's reference (pure, given ``weights``, which maps a
    weights path to what training changed)."""
    refs: dict[tuple[str, str, str, int, tuple[int, int]], Outcome] = {}
    for o in sorted(
        (o for o in outcomes if o.status == Status.OK and synchronous(o.cell)),
        key=lambda o: _simplicity(o.cell),
    ):
        refs.setdefault(equivalence_key(o.cell), o)
    verdicts = []
    for o in outcomes:
        ref = refs.get(equivalence_key(o.cell))
        if o.status == Status.OK and not synchronous(o.cell):
            verdicts.append(Verdict(o, "", None, None, None, ASYNCHRONOUS_NOTE))
            continue
        if o.status != Status.OK or ref is None or ref is o:
            verdicts.append(Verdict(o, ref.cell.id if ref else "", None, None, None))
            continue
        loss, ref_loss = o.final_loss, ref.final_loss
        assert loss is not None and ref_loss is not None, "an ok outcome has its final loss"
        loss_rel = abs(loss - ref_loss) / max(abs(ref_loss), 1e-30)
        weights_rel = relative_difference(weights(o.weights_path), weights(ref.weights_path))
        tol = TOLERANCE[o.cell.precision]
        verdicts.append(
            Verdict(o, ref.cell.id, loss_rel, weights_rel, loss_rel <= tol and weights_rel <= tol)
        )
    return verdicts


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    """Rows grouped by equivalence group, each with its comparison against the reference."""

    def num(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    lines = [
        (
            "effective batch",
            "cell",
            "status",
            "final loss",
            "weights digest",
            "loss rel",
            "weights rel",
            "verdict",
        )
    ]
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
            verdict = "agrees" if v.agrees else f"DISAGREES (tolerance {TOLERANCE[o.cell.precision]:g})"
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
    return render_table(lines[0], lines[1:], rule=False)
