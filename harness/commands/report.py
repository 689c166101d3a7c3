"""``python -m harness report``: figures (PNG, SVG) and one self-contained HTML file for a run."""

from __future__ import annotations

import argparse
from typing import Any

from harness.analysis.pages.report import write_report
from harness.commands.output import CommandResult
from harness.commands.paths import add_results_argument, out_folder, results_roots
from harness.results import history

NAME = "report"

EXITS: dict[int, str] = {0: "the report written", 2: "bad input or unreadable results"}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    add_results_argument(p)
    p.add_argument(
        "--run",
        default="latest",
        metavar="REF",
        help="the run(s) to report (see compare for REF). Default: latest",
    )
    p.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="where the report is written. Default: the first --results folder's report/ (beside a "
        "pack file: NAME-report)",
    )
    return p


def run(args: argparse.Namespace) -> CommandResult:
    roots = results_roots(args)
    cells, _ = history.load(roots, ab=True)
    run_ids = history.resolve(args.run, history.runs(cells), flag="--run")
    rows = cells[cells["run_id"].isin(run_ids)]
    out = out_folder(args, "--report-dir", "report")
    collectives = history.load_table(roots, "collectives")
    ratios = history.load_table(roots, "ratios")
    ratios = ratios[ratios["run_id"].isin(run_ids)]
    title = f"tf-strategy-bench: {', '.join(run_ids)}"
    written = write_report(rows, out, title, collectives, ratios)
    page = next((p for p in written if p.suffix == ".html"), None)
    figures = [p for p in written if p.suffix == ".png"]
    print(f"report: {page} (open it in a browser; {len(figures)} figures, PNG and SVG, in {out / 'figures'})")
    return CommandResult(0)
