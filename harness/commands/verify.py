"""``python -m harness verify``: do cells that must compute the same thing agree, and mixed
precision with float32? The verdicts: :mod:`harness.analysis.run.verdicts` (its workers'
``WorkerOptions.deterministic`` is set by :func:`harness.launch.cells.runner.verify_cells`)."""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis.run.numerics import ACROSS
from harness.analysis.run.verdicts import judge, verdict_table
from harness.commands.output import CommandResult
from harness.commands.selection import Selection, add_dry_run, add_selection_args, dry_run_text, select
from harness.commands.shared import interrupt_on_sigterm
from harness.contract.records import Status
from harness.errors import EXIT_FAILURE, EXIT_OK, HarnessError
from harness.launch.cells.runner import verify_cells
from harness.spec.cell import Cell
from harness.spec.training import MIN_SAME_UPDATES, same_updates

NAME = "verify"

EXITS: dict[int, str] = {
    0: "every compared cell agrees with its group's reference",
    1: "a cell disagrees, failed or is invalid, or nothing was compared",
    2: "bad input",
    130: "interrupted",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help=summary,
        description="Exit 0 when every group agrees within tolerance (float32: 1e-5 relative on the "
        "final loss and on the weights' change; mixed precision: 1e-2, bfloat16 2e-2) and every "
        "mixed-precision cell with its float32 twin, the same configuration in float32 (plain SGD: "
        f"bfloat16 {ACROSS['mixed_bfloat16', 'sgd']:g}, float16 {ACROSS['mixed_float16', 'sgd']:g}; "
        "other optimizers shown, not judged), 1 when a "
        "cell disagrees, is invalid or failed, 2 on bad input. Every cell trains with TensorFlow's "
        "op determinism on and TensorFloat-32 off, on GPUs and CPUs (an op with no deterministic "
        "kernel fails its cell, saying so). Default cells: --sweep equivalence.",
    )
    add_selection_args(p, "equivalence; axes given alone select only them")
    p.add_argument(
        "--updates",
        type=int,
        default=None,
        help="optimizer updates per cell (a multiple of every steps_per_execution in "
        "the selection). Default: the smallest such multiple that is at least "
        f"{MIN_SAME_UPDATES} ({MIN_SAME_UPDATES} for the equivalence sweep, "
        "10 at steps_per_execution 10)",
    )
    p.add_argument(
        "--include-unsupported",
        action="store_true",
        help="also run cells marked unsupported, to see what they compute",
    )
    add_dry_run(p, "the cells it would train and the updates each")
    return p


def run(args: argparse.Namespace) -> CommandResult:
    sel = select(args)  # every check made before the first process
    updates = verify_updates(args.updates, sel.cells)
    if args.dry_run:
        head = f"verify: {updates} updates per cell from seed {sel.protocol.seed}"
        print(dry_run_text(sel, head, args.include_unsupported))
        return CommandResult(EXIT_OK)
    interrupt_on_sigterm()
    return CommandResult(verify(sel, updates, args.include_unsupported))


def verify(sel: Selection, updates: int, include_unsupported: bool) -> int:
    """Train and judge the selection's cells (see the module docstring); the exit code."""
    print(
        f"verify: {len(sel.cells)} cells, {updates} updates each from seed {sel.protocol.seed}, "
        "op determinism on, TF32 off",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="harness-verify-") as work:
        outcomes = verify_cells(
            sel.cells, updates, sel.platform, sel.worker_options(Path(work)), include_unsupported
        )
        verdicts = judge(outcomes)
    print("\n" + verdict_table(verdicts))
    bad = [v for v in verdicts if v.agrees is False or v.outcome.status in (Status.FAILED, Status.INVALID)]
    compared = sum(v.agrees is not None for v in verdicts)
    if bad:
        print(f"\n{len(bad)} of {len(verdicts)} comparisons disagree, failed or are invalid.")
        return EXIT_FAILURE
    if not compared:
        print(
            "\nnothing was compared: no group (same model, data, precision and examples per "
            "update) holds two cells that ran, and no mixed-precision cell was judged against its "
            "float32 twin (the same configuration in float32); add a cell to compare with."
        )
        return EXIT_FAILURE
    across = sum(v.agrees is not None and v.across for v in verdicts)
    print(
        f"\nall {compared} compared cells agree: {compared - across} with their group's reference, "
        f"{across} in mixed precision with their float32 twin."
    )
    return EXIT_OK


def verify_updates(requested: int | None, cells: Sequence[Cell]) -> int:
    """The optimizer updates ``verify`` trains each cell for: a multiple of every steps_per_execution
    in the selection (a cell trains whole ``tf.function`` calls). Without ``--updates`` (``requested``
    None), the smallest multiple of their least common multiple at least
    :data:`~harness.spec.training.MIN_SAME_UPDATES` (:func:`~harness.spec.training.same_updates`); an
    explicit value that does not fit raises HarnessError naming it and the accepted ones."""
    spes = sorted({c.steps_per_execution for c in cells})
    step = math.lcm(*spes) if spes else 1
    if requested is None:
        return same_updates(step)
    if requested < 1 or requested % step:
        raise HarnessError(
            f"Received --updates={requested}; expected a positive multiple of {step} "
            f"(every steps_per_execution in the selection: {spes}), e.g. {step} or "
            f"{2 * step}; without --updates verify trains "
            f"{verify_updates(None, cells)}."
        )
    return requested
