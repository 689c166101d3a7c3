"""``python -m harness check``: read every file of a results folder (or of each ``--results`` root,
a pack as extracted) and say what cannot be read, what is left unfinished, and what to do
(:mod:`harness.results.check`)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from harness.commands.output import CommandResult, add_json
from harness.commands.paths import add_results_argument, results_roots
from harness.contract.outputs import CheckOutput
from harness.errors import EXIT_FAILURE, EXIT_OK
from harness.results import history
from harness.results.check import Finding, Scan, require_folder, scan
from harness.results.history import Root

NAME = "check"

EXITS: dict[int, str] = {0: "every file read", 1: "a damaged file (named)", 2: "bad input"}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help=summary,
        description="Exit 0: every file reads (notes may still name runs to resume or leftovers of "
        "interrupted writes); 1: a file cannot be read (readers leave its rows out).",
    )
    add_results_argument(p, "each is read whole, a pack as it was extracted")
    add_json(p)
    return p


def _check(root: Root) -> tuple[Scan, list[Finding]]:
    """One root scanned and its findings printed (a pack's temporary folder named as the pack:
    ``runs.tar.gz/cells/...``), with its summary line; (the scan, its findings as shown)."""
    found = scan(root.folder)
    named = root.given if root.pack else str(root.folder)
    shown = [dataclasses.replace(f, text=f.text.replace(str(root.folder), named)) for f in found.findings]
    for f in shown:
        print(("damaged: " if f.damaged else "note: ") + f.text)
    damaged = len(found.damaged)
    notes = len(found.findings) - damaged
    print(
        f"check {root.given}: {found.files} files read, {damaged} damaged"
        + (f", {notes} note(s)" if notes else "")
    )
    return found, shown


def run(args: argparse.Namespace) -> CommandResult:
    roots = history.open_roots(results_roots(args))
    for root in roots:  # every root checked before any is read: a bad one stops the command at once
        require_folder(root.folder, root.given)
    checked = [_check(root) for root in roots]
    findings = [f for _, shown in checked for f in shown]
    return CommandResult(
        EXIT_FAILURE if any(f.damaged for f in findings) else EXIT_OK,
        CheckOutput(
            results=", ".join(r.given for r in roots),
            files=sum(found.files for found, _ in checked),
            damaged=[f.text for f in findings if f.damaged],
            notes=[f.text for f in findings if not f.damaged],
        ),
    )
