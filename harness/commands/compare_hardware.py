"""``python -m harness compare-hardware``: which machine trains each model fastest, and for how much."""

from __future__ import annotations

import argparse
import base64
import csv
from pathlib import Path
from typing import Any

from harness.analysis.comparisons import hardware, hardware_figure, hardware_text, machines
from harness.analysis.run.tables import render_table
from harness.commands.output import CommandResult, add_json
from harness.commands.paths import add_results_argument, check_writable_file, out_folder, results_roots
from harness.commands.shared import across_min_effect, add_across_runs, calibration
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, RatioRow
from harness.errors import HarnessError
from harness.results import history

NAME = "compare-hardware"

EXITS: dict[int, str] = {0: "the comparison printed", 2: "bad input or unreadable results"}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    add_results_argument(p, "give each machine's folder or pack")
    p.add_argument(
        "--runs",
        nargs="*",
        default=None,
        metavar="REF",
        help=f"only these runs ({history.REF_HELP}); default: every run of the results given",
    )
    p.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="REF=NAME",
        help="call the machine of run REF NAME (e.g. runs older than `run --machine`); repeatable",
    )
    p.add_argument(
        "--baseline", default=None, metavar="NAME", help="the reference machine (default: the first by name)"
    )
    add_across_runs(p)
    p.add_argument(
        "--prices",
        action="append",
        default=[],
        metavar="FILE|NAME=USD",
        help="price per instance-hour in US dollars: NAME=USD, or a CSV (machine,usd_per_hour) or "
        'TOML ([machines."NAME"] usd_per_hour = 2.5) file; repeatable',
    )
    p.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="where the page (hardware.html) and its figure go. Default: hardware/ in the first --results",
    )
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the evidence table as CSV")
    add_json(p)
    return p


def _prices(items: list[str]) -> dict[str, float]:
    """Every --prices item: a file's table, or NAME=USD."""
    out: dict[str, float] = {}
    for item in items:
        path = Path(item)
        if path.is_file():
            out.update(hardware.parse_price_table(path.read_text(errors="replace"), item))
        elif "=" not in item:
            raise HarnessError(
                f"Received --prices {item!r}: no such file; expected a price file or NAME=USD."
            )
        else:
            name, usd = hardware.parse_price(item)
            out[name] = usd
    return out


def _renames(items: list[str], all_runs: Any) -> dict[str, str]:
    out = {}
    for item in items:
        ref, sep, name = item.partition("=")
        if not sep or not ref.strip() or not name.strip():
            raise HarnessError(f"Received --name {item!r}; expected REF=NAME, e.g. 20261127T035555Z=epyc-a.")
        for run_id in history.resolve(ref.strip(), all_runs, flag="--name"):
            out[run_id] = name.strip()
    return out


def run(args: argparse.Namespace) -> CommandResult:
    min_effect = across_min_effect(args)
    prices = _prices(args.prices)
    roots = results_roots(args)
    out = out_folder(args, "--report-dir", "hardware")
    if args.csv:
        check_writable_file(args.csv, "--csv")
    cells, _ = history.load(roots)
    all_runs = history.runs(cells)
    if args.runs:
        chosen = {r for ref in args.runs for r in history.resolve(ref, all_runs, flag="--runs")}
        cells = cells[cells["run_id"].isin(chosen)]
    rows = unflatten_all(CellRow, cells.to_dict("records"))
    ratio_frame = history.load_table(roots, "ratios")
    ratios = unflatten_all(
        RatioRow, ratio_frame[ratio_frame["run_id"].isin(set(cells["run_id"]))].to_dict("records")
    )
    found = machines.identify(rows, _renames(args.name, all_runs))
    result = hardware.compare(found, rows, ratios, args.baseline, min_effect, prices, calibration(args))
    print(hardware_text.text(result) + "\n")
    evidence = hardware_text.evidence_rows(result)
    title = "Every configuration both machines measured"
    print(render_table(hardware_text.EVIDENCE_HEADER, evidence, title=title))
    paths = hardware_figure.draw(result, out)
    pngs = [base64.b64encode(p.read_bytes()).decode() for p in paths if p.suffix == ".png"]
    page = out / "hardware.html"
    page.write_text(hardware_text.render_html(result, pngs))
    print(f"\npage: {page} (open it in a browser); figure: {', '.join(str(p) for p in paths) or 'none'}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(hardware_text.EVIDENCE_HEADER)
            w.writerows(evidence)
        print(f"wrote {args.csv}")
    return CommandResult(0, hardware_text.to_json(result))
