"""``python -m harness check``: read every file of a results folder and say what cannot be read,
what is left unfinished, and what to do (:mod:`harness.results.check`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.commands.output import add_json, give
from harness.contract.outputs import CheckOutput
from harness.errors import EXIT_FAILURE, EXIT_OK
from harness.results.check import scan

NAME = "check"

EXITS: dict[int, str] = {0: "every file read", 1: "a damaged file (named)", 2: "bad input"}
"""Exit code -> what it means (``--help`` and docs/reference/cli.md list them)."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="read every file of a results folder: name the damaged ones and the runs to resume",
        description="Exit 0: every file reads (notes may still name runs to resume or leftovers of "
        "interrupted writes); 1: a file cannot be read (readers leave its rows out).",
    )
    p.add_argument("--results", default="results", help="results folder. Default: results")
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    root = Path(args.results)
    found = scan(root)
    for f in found.findings:
        print(("damaged: " if f.damaged else "note: ") + f.text)
    damaged = len(found.damaged)
    notes = len(found.findings) - damaged
    print(
        f"check {root}: {found.files} files read, {damaged} damaged" + (f", {notes} note(s)" if notes else "")
    )
    give(
        CheckOutput(
            results=str(root),
            files=found.files,
            damaged=[f.text for f in found.findings if f.damaged],
            notes=[f.text for f in found.findings if not f.damaged],
        )
    )
    return EXIT_FAILURE if damaged else EXIT_OK
