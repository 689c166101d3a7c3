"""``python -m harness list``: a selection's cells, their ids, and which are unsupported here and why."""

from __future__ import annotations

import argparse
from typing import Any

from harness.commands.output import CommandResult, add_json
from harness.commands.selection import add_selection_args, how_it_measures, platform_text, select
from harness.contract.outputs import ListedCell, ListOutput
from harness.results.collectives import topology_label
from harness.spec.rules import unsupported_reason

NAME = "list"

EXITS: dict[int, str] = {0: "the cells listed", 2: "bad input"}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    add_selection_args(p)
    add_json(p)
    return p


def run(args: argparse.Namespace) -> CommandResult:
    sel = select(args)
    name = topology_label if sel.sweep.kind == "collectives" else (lambda c: c.id)
    planned = [(c, unsupported_reason(c, sel.platform)) for c in sel.cells]
    width = max((len(name(c)) for c, _ in planned), default=0)
    for cell, why in planned:
        print(f"{name(cell).ljust(width)}  {'run' if why is None else 'unsupported: ' + why}")
    n_unsup = sum(why is not None for _, why in planned)
    print(
        f"\n{len(planned)} cells in sweep {sel.sweep.name!r}: {len(planned) - n_unsup} to run, "
        f"{n_unsup} unsupported on this machine ({platform_text(sel.platform)})."
    )
    print("\n".join(how_it_measures(sel)))
    listed = [ListedCell(cell_id=name(c), unsupported=why) for c, why in planned]
    return CommandResult(
        0, ListOutput(sweep=sel.sweep.name, platform=platform_text(sel.platform), cells=listed)
    )
