"""One vocabulary across commands: each concept (:data:`CONCEPTS`) has one flag everywhere. No
parser takes an abbreviation (``allow_abbrev=False``), so a script written with an old spelling
(``--out``, ``--a``, ``--alpha``, ...) stops at once (exit 2) instead of running with a default it
did not ask for. Which command takes which is read off the parsers (:func:`concept_table`,
docs/reference/cli.md's table)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Concept:
    """One thing several commands take, and the flags that take it in every command."""

    name: str
    flags: tuple[str, ...]
    default: bool = False
    """Whether the table gives each command's default (as its help says it)."""


CONCEPTS: tuple[Concept, ...] = (
    Concept("results folder (written; read)", ("--results",)),
    Concept("report folder", ("--report-dir",)),
    Concept("side compared against", ("--baseline",)),
    Concept("side under test", ("--candidate",)),
    Concept("a side's environment variables", ("--baseline-env", "--candidate-env")),
    Concept("smallest change a verdict calls", ("--min-effect",), default=True),
    Concept("false-alarm probability", ("--false-alarm",), default=True),
    Concept("one JSON object on stdout", ("--json",)),
)
"""The shared concepts, in the order of docs/reference/cli.md's table."""

_DEFAULT = re.compile(r"Default: (.+?)\.?$")


def _default(action: argparse.Action) -> str:
    """An option's default as its help says it (``Default: X``), else its value."""
    found = _DEFAULT.search(action.help or "")
    return found.group(1) if found else str(action.default)


def _cell(concept: Concept, command: str, parser: argparse.ArgumentParser) -> str:
    """The concept's flags ``parser`` takes, its default in parentheses (where the concept gives
    it); "-" where it takes none."""
    actions = parser._option_string_actions
    flags = [f for f in concept.flags if f in actions]
    if not flags:
        return "-"
    default = f" ({_default(actions[flags[0]])})" if concept.default else ""
    return ", ".join(flags) + default


def concept_table(parsers: Mapping[str, argparse.ArgumentParser]) -> tuple[list[str], list[list[str]]]:
    """The commands that take a concept's flag (in ``parsers``' order), and a row per concept:
    its name, then each of those commands' cell (:func:`_cell`), read off the parsers."""
    cells = [[_cell(c, name, p) for name, p in parsers.items()] for c in CONCEPTS]
    keep = [i for i in range(len(parsers)) if any(row[i] != "-" for row in cells)]
    names = list(parsers)
    return [names[i] for i in keep], [
        [c.name, *(row[i] for i in keep)] for c, row in zip(CONCEPTS, cells, strict=True)
    ]
