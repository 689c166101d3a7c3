"""``python -m harness ingest``: pytest-benchmark JSON into the results history, as one run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.commands.paths import check_writable
from harness.errors import EXIT_FAILURE, EXIT_OK
from harness.results.ingest import ingest

NAME = "ingest"

EXITS: dict[int, str] = {0: "rows ingested", 1: "the file held no benchmark rows", 2: "bad input"}
"""Exit code -> what it means (``--help`` and docs/reference/cli.md list them)."""


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    p.add_argument("json", help="the --benchmark-json file")
    p.add_argument("--results", default="results", help="results folder. Default: results")
    return p


def run(args: argparse.Namespace) -> int:
    check_writable(Path(args.results), "--results", keep=False)  # made when a row is written
    done = ingest(Path(args.json), Path(args.results))
    print(
        f"run {done.run_id}: {done.rows} harness row(s) ingested"
        + (f" into {done.path}" if done.path else "")
        + (f"; skipped {len(done.skipped)} benchmark(s) without a harness row" if done.skipped else "")
    )
    return EXIT_OK if done.rows else EXIT_FAILURE
