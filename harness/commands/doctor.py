"""``python -m harness doctor``: what this machine can run, and why a device might sit idle."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.commands.selection import int_list
from harness.errors import HarnessError
from harness.launch.platform import DEVICE_CHOICES

NAME = "doctor"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME, help="what this machine can run: devices, build, threads, and a checked "
        "all-reduce through every strategy and cross-device op",
        description="Exit 0 when the probes ran (whatever they found), 1 when TensorFlow could not "
        "report its devices, 2 on bad input.")
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES,
                   help="probe GPUs (auto: when TensorFlow sees any) or logical CPU devices")
    p.add_argument("--replicas", default=None, metavar="N[,N...]",
                   help="replica counts to probe. Default: 2,3 on CPU; 1,2,3 and all GPUs")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument("--timeout", type=float, default=180.0,
                   help="seconds each probe process may take. Default: 180")
    return p


def run(args: argparse.Namespace) -> int:
    from harness.analysis.doctor import render, to_json_text
    from harness.launch.doctor import examine

    counts = int_list("--replicas", args.replicas, minimum=1) if args.replicas else None
    if not args.timeout > 0:
        raise HarnessError(f"Received --timeout={args.timeout}; expected seconds > 0.")
    if not args.json:
        print("probing (one process per replica count, then two local workers per "
              "MultiWorkerMirrored communication) ...", file=sys.stderr)
    report = examine(args.device, counts, args.timeout)
    print(to_json_text(report) if args.json else render(report))
    return 0
