"""``--json``: a command's one JSON object on stdout (:mod:`harness.contract.outputs`), the text it
prints for people on stderr meanwhile. A command that offers it calls :func:`add_json` on its
parser and :func:`give` with its object before it returns; :func:`harness.commands.main` does the
rest."""

from __future__ import annotations

import argparse
from typing import Any

_given: dict[str, Any] = {}


def add_json(p: argparse.ArgumentParser) -> None:
    """The ``--json`` flag."""
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (its keys: results/README.md, 'JSON output'); what "
        "the command prints for people goes to stderr",
    )


def give(obj: Any) -> None:
    """The command's object for ``--json`` (a :mod:`harness.contract.outputs` type)."""
    _given.clear()
    _given.update(obj)


def take() -> dict[str, Any]:
    """The object given since the last take, emptied."""
    out = dict(_given)
    _given.clear()
    return out
