"""One vocabulary across commands: each concept has one flag everywhere, and a spelling it had before
(2026-11-26) is refused with a message naming the new one, so a script written for the old
commands stops at once instead of running with a default it did not ask for.

The concepts and their flags (docs/reference/cli.md has the table, generated from here):

- ``--results``: the results folder, read (``report``, ``compare``, ``check``, ``pack``, ...) and
  written (``run``, ``ab``, ``nightly``); the commands that read runs take it more than once, and a
  pack file (``pack``) in place of a folder (:func:`harness.commands.paths.add_results_argument`);
  ``report`` writes its own pages to ``--report-dir``;
- ``--baseline`` / ``--candidate``: the two sides of any comparison, the side compared against and
  the side under test: runs in ``compare``, interpreters in ``ab``, builds in ``nightly``
  (``--baseline-env`` / ``--candidate-env``: their workers' environment);
- ``--min-effect``: the smallest relative change a verdict calls (a fraction);
- ``--false-alarm``: the probability of calling a change that is not there (``compare``: over all
  series of a gate; ``nightly``: per cell and night).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RENAMED: dict[str, dict[str, str]] = {
    "run": {"--out": "--results"},
    "ab": {
        "--out": "--results",
        "--a": "--baseline",
        "--b": "--candidate",
        "--a-env": "--baseline-env",
        "--b-env": "--candidate-env",
    },
    "nightly": {
        "--out": "--results",
        "--reference": "--baseline",
        "--reference-env": "--baseline-env",
        "--alpha": "--false-alarm",
    },
    "compare": {"--alpha": "--false-alarm"},
    "report": {"--out": "--report-dir"},
}
"""Command -> {old flag: its flag now}."""


class _Renamed(argparse.Action):
    """An old spelling: parsing it stops with an error naming the flag to use."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        parser.error(
            f"{self.option_strings[0]} is now {self.new} (one flag for one thing across commands: "
            "docs/reference/cli.md)"
        )


def refuse_renamed(parser: argparse.ArgumentParser, command: str) -> None:
    """Add ``command``'s old spellings (:data:`RENAMED`) to ``parser`` as refusals."""
    for old, new in RENAMED.get(command, {}).items():
        parser.add_argument(old, action=_Renamed, new=new, dest=f"renamed_{old.strip('-')}")


@dataclass(frozen=True)
class Concept:
    """One thing several commands take, and the flag each takes it with now."""

    name: str
    flags: dict[str, str]
    """Command -> its flag (a default in parentheses where the commands differ), or what the
    command does without one (text not starting with ``--``)."""


READERS = ("report", "compare", "compare-hardware", "predict", "ingest", "check", "pack")

CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "results folder (written; read)",
        dict.fromkeys(("run", "ab", "nightly", *READERS), "--results"),
    ),
    Concept("report folder", {"report": "--report-dir"}),
    Concept("side compared against", dict.fromkeys(("compare", "ab", "nightly"), "--baseline")),
    Concept("side under test", dict.fromkeys(("compare", "ab", "nightly"), "--candidate")),
    Concept(
        "a side's environment variables",
        dict.fromkeys(("ab", "nightly"), "--baseline-env, --candidate-env"),
    ),
    Concept(
        "smallest change a verdict calls",
        {
            "run": "--min-effect (0.05)",
            "compare": "--min-effect (0.05)",
            "ab": "--min-effect (0.02)",
            "nightly": "--min-effect (0.02)",
        },
    ),
    Concept("false-alarm probability", dict.fromkeys(("compare", "nightly"), "--false-alarm")),
    Concept(
        "one JSON object on stdout", dict.fromkeys(("run", "list", "compare", "check", "doctor"), "--json")
    ),
)
"""The shared concepts (docs/reference/cli.md's table; a test checks each flag exists)."""


def concept_table(commands: Sequence[str]) -> list[list[str]]:
    """Rows of concept x command: the flag now, ``(was --old)`` where it was renamed; "-" where the
    command does not take it."""
    rows = []
    for concept in CONCEPTS:
        cells = [concept.name]
        for command in commands:
            flag = concept.flags.get(command)
            was = [old for old, new in RENAMED.get(command, {}).items() if flag and new in flag.split(", ")]
            cells.append("-" if flag is None else flag + (f" (was {', '.join(was)})" if was else ""))
        rows.append(cells)
    return rows
