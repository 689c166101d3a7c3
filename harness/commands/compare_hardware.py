"""TODO docstring: commands.compare_hardware."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import EXIT_USAGE


def cmd_compare_hardware(args: argparse.Namespace) -> int:
    from harness.analysis.hardware import (
        compare_machines,
        latest_runs_per_machine,
        read_prices,
        text_table,
    )
    from harness.results import history

    try:
        cells, windows = history.load(args.results)
        all_runs = history.runs(cells)
        run_ids = ([r for ref in args.runs for r in history.resolve(ref, all_runs)] if args.runs
                   else latest_runs_per_machine(cells))
        prices = read_prices(Path(args.prices)) if args.prices else None
        table = compare_machines(cells, windows, run_ids, prices)
    except history.HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(text_table(table))
    print("\nratio: median throughput / the reference machine's, 95% bootstrap CI of window "
          "throughputs; examples/$ = examples/s x 3600 / (price per device-hour x devices).")
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    if args.figures:
        from harness.analysis.plots import hardware_scaling

        for path in hardware_scaling(table, Path(args.figures)):
            print(f"wrote {path}")
    return 0
