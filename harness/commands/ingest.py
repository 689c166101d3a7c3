"""TODO docstring: commands.ingest."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import EXIT_USAGE


def cmd_ingest(args: argparse.Namespace) -> int:
    from harness.results.ingest import IngestError, ingest

    try:
        done = ingest(Path(args.json), Path(args.results))
    except IngestError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"run {done.run_id}: {done.rows} harness row(s) ingested"
          + (f" into {done.path}" if done.path else "")
          + (f"; skipped {len(done.skipped)} benchmark(s) without a harness row" if done.skipped else ""))
    return 0 if done.rows else 1
