"""``python -m harness doctor``: what this machine can run, and why a device might sit idle."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from harness.analysis.pages.doctor import render, to_json_text
from harness.commands.output import CommandResult
from harness.commands.selection import add_dry_run, int_list
from harness.errors import EXIT_OK, require
from harness.launch.cells.doctor import MWMS_WORKERS, examine
from harness.launch.system.platform import DEVICE_CHOICES
from harness.spec.ports import OPEN_PORTS_FLAG
from harness.spec.protocol import MAX_CPU_DEVICES

NAME = "doctor"

EXITS: dict[int, str] = {
    0: "the report printed (its warnings name what does not work)",
    1: "TensorFlow could not report its devices",
    2: "bad input",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    p.add_argument(
        "--device",
        default="auto",
        choices=DEVICE_CHOICES,
        help="probe GPUs (auto: when TensorFlow sees any) or logical CPU devices",
    )
    p.add_argument(
        "--replicas",
        default=None,
        metavar="N[,N...]",
        help="replica counts to probe. Default: 2,3 on CPU; 1,2,3 and all GPUs, and 2 logical "
        "GPUs on each where nvidia-smi gives their memory",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument(
        "--timeout", type=float, default=180.0, help="seconds each probe process may take. Default: 180"
    )
    p.add_argument(
        OPEN_PORTS_FLAG,
        dest="open_ports",
        action="store_true",
        help="probe MultiWorkerMirrored's two local workers even where this machine cannot give them "
        "a network namespace of their own: their TensorFlow servers then listen on every interface "
        "without authentication while they run",
    )
    add_dry_run(p, "the probe processes it would start", selection=False)
    return p


def plan(args: argparse.Namespace) -> list[int] | None:
    """The replica counts to probe (None: the machine's defaults), every flag checked."""
    counts = (
        int_list("--replicas", args.replicas, 1, MAX_CPU_DEVICES)  # GPUs: checked once counted
        if args.replicas is not None
        else None
    )
    require(
        {"--timeout": (args.timeout, math.isfinite(args.timeout) and args.timeout > 0, "finite seconds > 0")}
    )
    return counts


def run(args: argparse.Namespace) -> CommandResult:
    counts = plan(args)
    if args.dry_run:
        which = (
            ",".join(map(str, counts))
            if counts
            else "2,3 on CPU; 1, 2, 3 and all GPUs, and 2 logical GPUs on each"
        )
        print(
            f"doctor --device {args.device}: one process asks TensorFlow for the devices, then one "
            f"probe process per replica count ({which}), then {MWMS_WORKERS} local workers per "
            f"MultiWorkerMirrored communication, in a network namespace of their own where this machine "
            f"allows one; each process may take {args.timeout:g} s.\n"
            "dry run: nothing started."
        )
        return CommandResult(EXIT_OK)
    if not args.json:
        print(
            "probing (one process per replica count, then two local workers per "
            "MultiWorkerMirrored communication) ...",
            file=sys.stderr,
        )
    report = examine(args.device, counts, args.timeout, args.open_ports)
    print(to_json_text(report) if args.json else render(report))
    return CommandResult(0)
