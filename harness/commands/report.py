"""TODO docstring: commands.report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import EXIT_USAGE


def cmd_report(args: argparse.Namespace) -> int:
    from harness.analysis.report import write_report
    from harness.results import history

    try:
        cells, _ = history.load(args.results)
        run_ids = history.resolve(args.run, history.runs(cells))
    except history.HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    rows = cells[cells["run_id"].isin(run_ids)]
    out = Path(args.out) if args.out else Path(args.results) / "report"
    for path in write_report(rows, out, f"tf-strategy-bench: {', '.join(run_ids)}"):
        print(f"wrote {path}")
    return 0
