"""``python -m harness compare-hardware``: machines side by side, like for like, with cost and energy."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.analysis.hardware import FOOTNOTE, compare_machines, read_prices, text_table
from harness.analysis.plots import hardware_scaling
from harness.commands.paths import check_writable, check_writable_file
from harness.results import history

NAME = "compare-hardware"

EXITS: dict[int, str] = {0: "the comparison printed", 2: "bad input or unreadable results"}
"""Exit code -> what it means (``--help`` and docs/reference/cli.md list them)."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="two or more machines (fingerprints), like for like: per-cell "
        "ratios with CI, scaling side by side, cost and energy",
    )
    p.add_argument("--results", default="results", help="results folder. Default: results")
    p.add_argument(
        "--runs",
        nargs="*",
        default=None,
        metavar="REF",
        help="runs to compare (default: the newest run of each machine)",
    )
    p.add_argument(
        "--prices",
        default=None,
        metavar="FILE",
        help="price table, CSV (machine,price_per_device_hour,purchase_price) or TOML",
    )
    p.add_argument("--figures", default=None, metavar="DIR", help="also draw scaling side by side")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the table as CSV")
    return p


def run(args: argparse.Namespace) -> int:
    cells, _ = history.load(args.results)
    all_runs = history.runs(cells)
    run_ids = (
        [r for ref in args.runs for r in history.resolve(ref, all_runs, flag="--runs")]
        if args.runs
        else history.latest_runs_per_machine(cells)
    )
    prices = read_prices(Path(args.prices)) if args.prices else None
    if args.csv:
        check_writable_file(args.csv, "--csv")
    if args.figures:
        check_writable(Path(args.figures), "--figures")
    table = compare_machines(history.ok_rows(cells, run_ids), prices)
    print(text_table(table))
    print("\n" + FOOTNOTE)
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    if args.figures:
        for path in hardware_scaling(table, Path(args.figures)):
            print(f"wrote {path}")
    return 0
