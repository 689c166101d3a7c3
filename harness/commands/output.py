"""What a command's ``run(args)`` returns (:class:`CommandResult`), and ``--json``: the command's one
object on stdout (:mod:`harness.contract.outputs`), the text it prints for people on stderr
meanwhile. A command that offers it calls :func:`add_json` on its parser and returns its object in
its outcome; :func:`harness.commands.main` does the rest."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class CommandResult:
    """A command's exit code and its ``--json`` object (a :mod:`harness.contract.outputs` type;
    empty for a command without one, or one that stopped before it had it)."""

    code: int
    output: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def add_json(p: argparse.ArgumentParser) -> None:
    """The ``--json`` flag."""
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (its keys: results/README.md, 'JSON output'); what "
        "the command prints for people goes to stderr",
    )


def say_wrote(paths: Iterable[object], note: str = "") -> None:
    """``wrote PATH`` for each file or folder written (``note`` after each), flushed."""
    for path in paths:
        print(f"wrote {path}{note}", flush=True)
