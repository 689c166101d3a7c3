"""TODO docstring: commands.doctor."""

from __future__ import annotations

import argparse
import sys

from harness.commands.selection import _int_list
from harness.errors import EXIT_USAGE, SpecError


def cmd_doctor(args: argparse.Namespace) -> int:
    from harness.analysis.doctor import render, to_json_text
    from harness.launch.doctor import DoctorError, examine

    try:
        counts = _int_list("--replicas", args.replicas, minimum=1) if args.replicas else None
        if not args.timeout > 0:
            raise SpecError(f"Received --timeout={args.timeout}; expected seconds > 0.")
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not args.json:
        print("probing (one process per replica count, then two local workers per "
              "MultiWorkerMirrored communication) ...", file=sys.stderr)
    try:
        report = examine(args.device, counts, args.timeout)
    except DoctorError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE if "Received" in str(e) else 1
    print(to_json_text(report) if args.json else render(report))
    return 0
