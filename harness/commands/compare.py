"""TODO docstring: commands.compare."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.analysis.gate import GatePolicy


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.analysis.compare import compare, text_table, write_markdown
    from harness.analysis.gate import EXIT_ERROR
    from harness.results import history

    checks = {"--min-effect": (args.min_effect, 0 <= args.min_effect < 1),
              "--z": (args.z_threshold, args.z_threshold > 0),
              "--min-history": (args.min_history, args.min_history >= 1),
              "--alpha": (args.alpha, 0 < args.alpha < 1)}
    bad = [(flag, value) for flag, (value, ok) in checks.items() if not ok]
    if bad:
        print(f"error: Received {bad[0][0]}={bad[0][1]}; "
              "expected --min-effect in [0, 1), --z > 0, --min-history >= 1, --alpha in (0, 1).",
              file=sys.stderr)
        return EXIT_ERROR
    policy = GatePolicy(args.min_effect, args.z_threshold, args.min_history, args.alpha)
    try:
        cells, _ = history.load(args.results)
        result = compare(cells, args.baseline, args.candidate, policy)
    except history.HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    print(text_table(result))
    if args.markdown:
        write_markdown(result, Path(args.markdown))
        print(f"wrote {args.markdown}")
    if args.figures:
        from harness.analysis.plots import series_figures

        for path in series_figures(cells, result, Path(args.figures)):
            print(f"wrote {path}")
    if result.exit_code == 3:
        print(f"not enough history: no cell has {policy.min_history} baseline runs on this "
              "fingerprint; widen --baseline (e.g. last:20) or lower --min-history.")
    return result.exit_code
