"""``python -m harness compare``: the regression gate, a candidate run against its history."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

from harness.analysis.comparisons.compare import compare, markdown, series_figures, text_table
from harness.analysis.comparisons.gate import GatePolicy
from harness.analysis.run.cost import cost_text
from harness.commands.output import CommandResult, add_json, say_wrote
from harness.commands.paths import (
    add_markdown,
    add_results_argument,
    check_writable,
    check_writable_file,
    results_roots,
    write_markdown,
)
from harness.commands.shared import ACROSS_MIN_EFFECT, add_min_effect
from harness.contract.outputs import CompareOutput, SeriesOutput
from harness.errors import EXIT_SHORT_HISTORY
from harness.results import history

NAME = "compare"

EXITS: dict[int, str] = {
    0: "no regression",
    1: "a regression, or a cell that now fails",
    2: "bad input (unreadable results, a bad reference)",
    3: "not enough history to judge any cell",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help=summary,
        description="REF: a run id (or unique prefix), latest, previous, last:N, a date YYYY-MM-DD or a range "
        "YYYY-MM-DD..YYYY-MM-DD.",
    )
    add_results_argument(p, "the candidate and its baseline may come from different ones")
    p.add_argument(
        "--baseline",
        default="last:20",
        metavar="REF",
        help="baseline runs (their history feeds the robust z-score); runs at or after "
        "the candidate are never in it. Default: last:20",
    )
    p.add_argument(
        "--candidate",
        default="latest",
        metavar="REF",
        help="candidate run(s): last:N after N runs of the same code gates on all N, "
        "which shrinks the detectable effect by about sqrt(N). Default: latest",
    )
    gp = GatePolicy()
    alarm = "the probability of calling a change that is not there, over all series of the gate"
    add_min_effect(p, ACROSS_MIN_EFFECT, "smallest change called, as a fraction")
    for flag, dest, field, what in (  # the policy's other fields, each with its default
        ("--z", "z_threshold", "z_threshold", "robust z-score a change must reach against the history"),
        ("--min-history", "min_history", "min_history", "baseline runs a series needs to be judged"),
        ("--false-alarm", "false_alarm", "alpha", alarm + " (family-wise, the CI test)"),
    ):
        default = getattr(gp, field)
        p.add_argument(
            flag, type=type(default), default=default, dest=dest, help=f"{what}. Default: {default}"
        )
    add_markdown(p, "the result")
    p.add_argument(
        "--figures",
        default=None,
        metavar="DIR",
        help="also draw each changed series' history with its change points",
    )
    add_json(p)
    return p


def run(args: argparse.Namespace) -> CommandResult:
    policy = GatePolicy(args.min_effect, args.z_threshold, args.min_history, args.false_alarm)
    roots = results_roots(args)
    cells, _ = history.load(roots)
    chosen = history.select_comparison(cells, args.baseline, args.candidate)
    if args.markdown:
        check_writable_file(args.markdown, "--markdown")
    if args.figures:
        check_writable(Path(args.figures), "--figures")
    result = compare(cells, chosen.candidate, chosen.baseline, chosen.history_runs, policy)
    print(text_table(result))
    cost = cost_text(history.costs(roots), chosen.candidate, chosen.baseline)
    if cost:
        print(cost)
    write_markdown(args.markdown, markdown(result))
    if args.figures:
        say_wrote(series_figures(cells, result, Path(args.figures)))
    if result.exit_code == EXIT_SHORT_HISTORY:
        print(result.shortfall)
    series = [
        cast(SeriesOutput, {k: getattr(v, k) for k in SeriesOutput.__annotations__}) for v in result.verdicts
    ]
    return CommandResult(
        result.exit_code,
        CompareOutput(
            candidate_runs=result.candidate_runs, baseline_runs=result.baseline_runs, series=series
        ),
    )
