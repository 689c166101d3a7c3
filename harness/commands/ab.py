"""``python -m harness ab``: is build (or setting) B slower than A on these cells, now, on this
machine? Paired, interleaved processes and a sequential decision (:mod:`harness.analysis.versions.ab`).
Exit codes: :data:`EXITS`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from harness.analysis.run.tables import render_table
from harness.analysis.versions.ab import EXIT_CODES, FAILED, Rule, overall
from harness.analysis.versions.ab_text import HEADER, markdown, progress_line, rows
from harness.commands.output import CommandResult, say_wrote
from harness.commands.paths import add_markdown, check_writable_file, write_markdown
from harness.commands.selection import Selection, add_dry_run, dry_run_text, refuse_tenant_framework, select
from harness.commands.shared import (
    add_measuring,
    add_pair_rule,
    add_side_envs,
    interrupt_on_sigterm,
    pair_rule,
    paired,
    side_envs,
)
from harness.contract.outputs import AbOutput, PairedCell
from harness.errors import EXIT_INTERRUPTED, EXIT_OK, HarnessError
from harness.launch.system import forks
from harness.launch.system.lock import taken
from harness.launch.versions.ab import MODES, AbSide, Mode, given, run_ab
from harness.spec.axes import AXES

NAME = "ab"

EXITS: dict[int, str] = {
    0: "no regression",
    1: "a regression, or a cell that failed",
    2: "bad input",
    3: "undecided within the pairs allowed",
    130: "interrupted",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    p.add_argument(
        "--baseline",
        default=None,
        metavar="PYTHON",
        help="side A, compared against: an interpreter with TensorFlow installed. Default: this one",
    )
    p.add_argument(
        "--candidate",
        default=None,
        metavar="PYTHON",
        help="side B, under test: an interpreter with TensorFlow installed. Default: this one",
    )
    add_side_envs(p, ("A", "B"))
    p.add_argument(
        "--mode",
        default="turns",
        metavar="MODE",
        help="turns (default): each pair's A and B processes are live at once and take turns, "
        "each side's one timed window with the whole machine while the other waits; alternate: one "
        "after the other, each with the whole host (its pairs vary more: docs/explanation/calibration.md)",
    )
    add_pair_rule(
        p,
        "cell",
        (5, 30),
        "fewest pairs before a verdict",
        "smallest relative change worth a verdict: a cell is slower when the 95%% CI of B/A lies below "
        "1 - F, the same when inside [1 - F, 1 + F]",
    )
    add_markdown(p, "the result")
    add_measuring(
        p, "none: give --sweep NAME or the axes of the cells to compare", "ab's rows go under RESULTS/ab"
    )
    add_dry_run(p, "the cells it would compare and the pairs per cell")
    return p


def _python(flag: str, path: str | None) -> str | None:
    if path is None:
        return None
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise HarnessError(
            f"Received {flag}={path!r}; expected the path of a Python interpreter "
            "(e.g. .venv-a/bin/python) with TensorFlow installed."
        )
    return path


def plan(args: argparse.Namespace) -> tuple[AbSide, AbSide, Rule, Mode, Selection]:
    """What ``ab`` compares and how: the sides, the decision rule, the mode and the cells, every
    check made before the first process (HarnessError on bad input)."""
    if args.sweep is None and not any(getattr(args, a.name) is not None for a in AXES):
        raise HarnessError(
            "ab needs the cells to compare: cell axes (e.g. --model cnn,dense "
            "--strategy default --batch 64) or --sweep NAME."
        )
    env_a, env_b = side_envs(args)
    a = AbSide("A", _python("--baseline", args.baseline), env_a)
    b = AbSide("B", _python("--candidate", args.candidate), env_b)
    rule = pair_rule(args)
    if args.mode not in MODES:
        raise HarnessError(f"Received --mode {args.mode!r}; expected one of {sorted(MODES)}.")
    mode = MODES[args.mode]
    if args.markdown:
        check_writable_file(args.markdown, "--markdown", keep=not args.dry_run)
    return a, b, rule, mode, refuse_tenant_framework(select(args), "ab")


def run(args: argparse.Namespace) -> CommandResult:
    a, b, rule, mode, sel = plan(args)
    if a.python == b.python and a.env == b.env:
        print("note: A and B are the same interpreter and settings (an A/A check)", flush=True)
    side_a, side_b = (given(s.python or sys.executable, s.env) for s in (a, b))
    head = (
        f"ab: {len(sel.cells)} cells, pairs of fresh processes (A: {side_a}; B: {side_b}), {rule.min_pairs} "
        f"to {rule.max_pairs} pairs per cell, min effect {rule.min_effect:.0%}"
    )
    if args.dry_run:
        print(dry_run_text(sel, f"{head}\nmode {mode.name}: {mode.text}"))
        return CommandResult(EXIT_OK)
    interrupt_on_sigterm()
    lock = taken(Path(args.results), args.wait_lock)
    print(head, flush=True)
    print(f"mode {mode.name}: {mode.text}", flush=True)
    with lock, forks.serving(sel.protocol.fork):
        result = run_ab(
            sel.cells,
            sel.protocol,
            sel.platform,
            Path(args.results),
            a,
            b,
            rule,
            mode,
            report=lambda outcome, order: print(progress_line(outcome, order), flush=True),
            machine=sel.machine,
        )
    print("\n" + render_table(HEADER, rows(result.outcomes)))
    failed = any(o.failure for o in result.outcomes)
    verdict = FAILED if failed else overall([o.decision for o in result.outcomes])
    stopped = (
        " (interrupted: the pairs so far are in the table and the history)" if result.interrupted else ""
    )
    print(f"\nab {result.ab_id}: {verdict}{stopped}")
    write_markdown(args.markdown, markdown(result.outcomes, verdict, rule))
    say_wrote(result.paths)
    return CommandResult(
        EXIT_INTERRUPTED if result.interrupted else EXIT_CODES[verdict],
        AbOutput(
            ab_id=result.ab_id,
            verdict=verdict,
            written=[str(p) for p in result.paths],
            cells=[PairedCell(cell_id=o.cell.id, **paired(o.decision, o.failure)) for o in result.outcomes],
        ),
    )
