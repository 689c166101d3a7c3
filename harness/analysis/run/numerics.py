"""What a precision change does to numerics: ``verify``'s tolerance across precisions
(:data:`ACROSS`), and the answer's line that puts a mixed-precision configuration's ``seed_loss``
(cells table) beside float32's (:func:`numerics_line`). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from harness.contract.records import CellRow
from harness.spec import words
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.strategies import STRATEGIES

ACROSS = {("mixed_bfloat16", "sgd"): 0.1, ("mixed_float16", "sgd"): 0.1}
"""(precision, optimizer) -> how far (relative, on the final loss and on the weights' change, as
within a precision) a mixed-precision cell may end from its float32 twin after ``verify``'s
updates; an optimizer without one is shown, not judged. Measured on 2026-12-06 (CPU, seeds 0-4,
five configurations): rounding moved the weights' change at most 3.6e-2 at verify's updates and
7.1e-2 at 500; a gradient planted 1.25x off moved it 0.12 to 0.22; under Adam rounding alone moved
it up to 0.32 (docs/explanation/accumulation.md has the commands and every figure)."""


def numerics_line(rows: Sequence[CellRow], configs: Sequence[words.Values]) -> str | None:
    """The line for the first pair of ``rows`` (the leader first, then its contenders; ``configs``:
    each one's axis values) that differ only in precision, mixed against float32, both with their
    seed loss after the same updates and trained synchronously; None where no pair is."""
    both = product(range(len(rows)), repeat=2)
    pairs = [(m, f) for m, f in both if _twins(rows[m], rows[f], configs[m], configs[f])]
    if not pairs:
        return None
    m, f = min(pairs, key=min)  # the leader's pair first
    mixed, single = rows[m].checks.seed_loss or 0.0, rows[f].checks.seed_loss or 0.0
    precision, optimizer = str(configs[m]["precision"]), str(configs[m].get("optimizer", "sgd"))
    tolerance = ACROSS.get((precision, optimizer))
    command = (
        f"`python -m harness verify {words.flags(configs[m], vary=('precision', ('float32', precision)))}`"
    )
    return (
        f"Numerics: {AXIS_BY_NAME['precision'].say(precision)} reached loss {mixed:.6g} after the same "
        f"{rows[m].checks.seed_updates} updates from the run's seed where float32 reached {single:.6g} "
        f"({abs(mixed - single) / max(abs(single), 1e-30) * 100:.2g}% apart; each the median over its "
        "processes); "
        + (
            f"{command} checks it, and the weights' change, against the tolerance across precisions "
            f"({tolerance:.0%})."
            if tolerance
            else f"{command} shows it beside the weights' change, unjudged: no tolerance holds for "
            f"{AXIS_BY_NAME['optimizer'].say(optimizer)}, whose update turns rounding into tens of percent."
        )
    )


def _twins(mixed: CellRow, single: CellRow, mixed_config: words.Values, single_config: words.Values) -> bool:
    """``single`` is ``mixed``'s configuration in float32, both recorded their seed loss after the
    same updates, and they trained synchronously (asynchronous updates make no two losses alike)."""
    a, b, cell = mixed.checks, single.checks, mixed.cell
    return (
        mixed_config.get("precision") != "float32"
        and dict(single_config) == {**mixed_config, "precision": "float32"}
        and None not in (a.seed_loss, b.seed_loss)
        and a.seed_updates == b.seed_updates
        and STRATEGIES[cell.strategy].synchronous_at(cell.workers)
    )
