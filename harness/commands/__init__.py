"""TODO docstring: commands.__init__."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis.gate import GatePolicy
from harness.commands.compare import cmd_compare
from harness.commands.compare_hardware import cmd_compare_hardware
from harness.commands.doctor import cmd_doctor
from harness.commands.ingest import cmd_ingest
from harness.commands.listing import cmd_list
from harness.commands.report import cmd_report
from harness.commands.run import _interrupt_on_sigterm, cmd_run
from harness.commands.selection import _selection_args, select
from harness.commands.verify import _check_updates, cmd_verify
from harness.errors import EXIT_USAGE, SpecError
from harness.launch.platform import DEVICE_CHOICES
from harness.mnist import DataError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description="Benchmark TensorFlow training of the MNIST CNN and a dense model under every "
                    "tf.distribute strategy.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure a sweep and append rows to the results dataset")
    _selection_args(run)
    run.add_argument("--out", default="results", help="results folder. Default: results")
    lst = sub.add_parser("list", help="print a sweep's cells, ids and which are unsupported (no TF)")
    _selection_args(lst)
    ver = sub.add_parser(
        "verify", help="train cells for a fixed number of updates from one seed and check that cells "
        "which must be equivalent (same model, data, precision and examples per update) agree",
        description="Exit 0 when every group agrees within tolerance (float32: 1e-5 relative on the "
        "final loss and on the weights' L2 norm; mixed precision: 1e-2, bfloat16 2e-2), 1 when a "
        "cell disagrees, is invalid or failed, 2 on bad input. Default cells: --sweep equivalence.")
    _selection_args(ver)
    ver.add_argument("--updates", type=int, default=8,
                     help="optimizer updates per cell (a multiple of every steps_per_execution). "
                          "Default: 8")
    ver.add_argument("--include-unsupported", action="store_true",
                     help="also run cells marked unsupported, to see what they compute")
    rep = sub.add_parser("report", help="figures (PNG, SVG) and one self-contained HTML file for a run")
    rep.add_argument("--results", default="results", help="results folder. Default: results")
    rep.add_argument("--run", default="latest", metavar="REF",
                     help="the run(s) to report (see compare for REF). Default: latest")
    rep.add_argument("--out", default=None, help="output folder. Default: RESULTS/report")
    ing = sub.add_parser("ingest", help="add pytest-benchmark JSON (pytest benchmarks/ "
                         "--benchmark-json=F) to the results history, as one run")
    ing.add_argument("json", help="the --benchmark-json file")
    ing.add_argument("--results", default="results", help="results folder. Default: results")
    hw = sub.add_parser("compare-hardware", help="two or more machines (fingerprints), like for "
                        "like: per-cell ratios with CI, scaling side by side, cost and energy")
    hw.add_argument("--results", default="results", help="results folder. Default: results")
    hw.add_argument("--runs", nargs="*", default=None, metavar="REF",
                    help="runs to compare (default: the newest run of each machine)")
    hw.add_argument("--prices", default=None, metavar="FILE",
                    help="price table, CSV (machine,price_per_device_hour,purchase_price) or TOML")
    hw.add_argument("--figures", default=None, metavar="DIR", help="also draw scaling side by side")
    hw.add_argument("--csv", default=None, metavar="FILE", help="also write the table as CSV")
    cmp = sub.add_parser(
        "compare", help="the regression gate: compare a candidate run with baseline runs of the "
        "same cells on the same machine fingerprint",
        description="Exit 0: no regression; 1: a regression (or a cell that now fails); 2: error "
        "(unreadable results, bad reference); 3: not enough history to judge any cell. REF: "
        "a run id (or unique prefix), latest, previous, last:N, a date YYYY-MM-DD or a range "
        "YYYY-MM-DD..YYYY-MM-DD.")
    cmp.add_argument("--results", default="results", help="results folder. Default: results")
    cmp.add_argument("--baseline", default="last:20", metavar="REF",
                     help="baseline runs (their history feeds the robust z-score); runs at or after "
                          "the candidate are never in it. Default: last:20")
    cmp.add_argument("--candidate", default="latest", metavar="REF",
                     help="candidate run(s): last:N after N runs of the same code gates on all N, "
                          "which shrinks the detectable effect by about sqrt(N). Default: latest")
    gp = GatePolicy()
    cmp.add_argument("--min-effect", type=float, default=gp.min_effect,
                     help=f"smallest change called, as a fraction. Default: {gp.min_effect}")
    cmp.add_argument("--z", type=float, default=gp.z_threshold, dest="z_threshold",
                     help="robust z-score a change must reach against the history. "
                          f"Default: {gp.z_threshold}")
    cmp.add_argument("--min-history", type=int, default=gp.min_history,
                     help=f"baseline runs a series needs to be judged. Default: {gp.min_history}")
    cmp.add_argument("--alpha", type=float, default=gp.alpha,
                     help="family-wise false-call rate of the CI test over all series. "
                          f"Default: {gp.alpha}")
    cmp.add_argument("--markdown", default=None, metavar="FILE",
                     help="also write the result as markdown for a CI comment")
    cmp.add_argument("--figures", default=None, metavar="DIR",
                     help="also draw each changed series' history with its change points")
    doc = sub.add_parser(
        "doctor", help="what this machine can run: devices, build, threads, and a checked "
        "all-reduce through every strategy and cross-device op",
        description="Exit 0 when the probes ran (whatever they found), 1 when TensorFlow could not "
        "report its devices, 2 on bad input.")
    doc.add_argument("--device", default="auto", choices=DEVICE_CHOICES,
                     help="probe GPUs (auto: when TensorFlow sees any) or logical CPU devices")
    doc.add_argument("--replicas", default=None, metavar="N[,N...]",
                     help="replica counts to probe. Default: 2,3 on CPU; 1,2,3 and all GPUs")
    doc.add_argument("--json", action="store_true", help="print one JSON object instead")
    doc.add_argument("--timeout", type=float, default=180.0,
                     help="seconds each probe process may take. Default: 180")
    return parser


SELECTION_FREE: dict[str, Any] = {
    "compare-hardware": cmd_compare_hardware, "ingest": cmd_ingest, "compare": cmd_compare,
    "report": cmd_report, "doctor": cmd_doctor,
}
"""Subcommands that take no cell selection: name -> handler(args) -> exit code."""


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in SELECTION_FREE:
        return SELECTION_FREE[args.command](args)
    try:
        sel = select(args)
        if args.command == "verify":
            _check_updates(args.updates, sel.cells)
    except (SpecError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "list":
        return cmd_list(sel)
    _interrupt_on_sigterm()
    if args.command == "verify":
        return cmd_verify(sel, args.updates, args.include_unsupported)
    return cmd_run(sel, Path(args.out))
