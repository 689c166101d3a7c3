"""``python -m harness compare-links``: what a faster link between nodes buys, per model and
multi-node configuration (:mod:`harness.analysis.scale.links`), beside the model of the step across
nodes and the answer for N nodes."""

from __future__ import annotations

import argparse
import math
from typing import Any

from harness.analysis.run.tables import render_table
from harness.analysis.scale import links, links_text, scale_out, scaling_figure
from harness.commands.output import CommandResult, add_json, say_wrote
from harness.commands.paths import add_figures, add_results_argument, out_folder, results_roots
from harness.commands.selection import int_list
from harness.commands.shared import across_min_effect, add_across_runs, calibration
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow
from harness.errors import HarnessError
from harness.results import history

NAME = "compare-links"

EXITS: dict[int, str] = {
    0: "the comparison printed",
    2: "bad input: no multi-node rows, one link setting only, an unknown --model, or unreadable results",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    add_results_argument(p, "the runs at each link setting and the one-node 1-worker baselines")
    p.add_argument("--model", default=None, metavar="MODEL", help="only this model. Default: every model")
    add_figures(p)
    p.add_argument(
        "--nodes",
        default=",".join(map(str, scale_out.NODE_COUNTS)),
        metavar="LIST",
        help="node counts of the answer for N nodes, comma-separated (when not given: 2,4,8,16,32,64)",
    )
    p.add_argument(
        "--link-gbps",
        default=None,
        metavar="LIST",
        help="links (Gbit/s) of the answer for N nodes. Default: the measured link settings",
    )
    add_across_runs(p)
    add_json(p)
    return p


MAX_NODES = 65536
"""The most nodes the answer takes."""


def _gbps(text: str | None) -> tuple[float, ...]:
    """--link-gbps: Gbit/s values > 0 (none: the measured settings); HarnessError naming the value."""
    if text is None:
        return ()
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        values = ()
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise HarnessError(
            f"Received --link-gbps={text!r}; expected comma-separated links in Gbit/s > 0, e.g. 1,10."
        )
    return values


def run(args: argparse.Namespace) -> CommandResult:
    """Print the comparison (answer, table, where the model is right, the answer for N nodes), draw
    its figure."""
    min_effect = across_min_effect(args)
    counts, asked = int_list("--nodes", args.nodes, 2, MAX_NODES), _gbps(args.link_gbps)
    roots = results_roots(args)
    folder = out_folder(args, "--figures", "figures")
    cells, _ = history.load(roots)
    rows = unflatten_all(CellRow, cells.to_dict("records"))
    result = links.compare(rows, args.model, ", ".join(roots), min_effect, calibration(args), asked, counts)
    print(links_text.text(result) + "\n")
    title = "Every configuration at every link setting it was measured at"
    print(render_table(links_text.HEADER, links_text.table_rows(result), title=title))
    print(links_text.right_text(result) + "\n")
    print(links_text.nodes_text(result))
    paths = scaling_figure.draw(result, folder)
    say_wrote(paths)
    return CommandResult(0, links_text.to_json(result, paths))
