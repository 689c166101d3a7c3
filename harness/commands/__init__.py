"""The command line: ``python -m harness COMMAND ...``, one module per command.

Each command module has ``NAME``, ``add_parser(subparsers)`` and ``run(args) -> exit code``;
:data:`COMMANDS` chooses among them. Every command validates its input before any expensive
work and never imports TensorFlow (worker processes do). A :class:`~harness.errors.HarnessError`
raised anywhere below a command is printed here, once, and becomes the exit code it carries.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from harness.commands import (
    ab,
    check,
    compare,
    compare_hardware,
    doctor,
    ingest,
    listing,
    nightly,
    predict,
    report,
    run,
    verify,
)
from harness.errors import EXIT_SHORT_HISTORY, HarnessError

COMMANDS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        run,
        listing,
        verify,
        report,
        compare,
        ab,
        nightly,
        compare_hardware,
        predict,
        ingest,
        doctor,
        check,
    )
}
"""Command name -> its module, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description="Benchmark TensorFlow training of the MNIST CNN and a dense model under every "
        "tf.distribute strategy.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run the command, return its exit code (printing a HarnessError's message)."""
    if hasattr(sys.stdout, "reconfigure"):  # a path that is not UTF-8 prints escaped, as on stderr
        sys.stdout.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except HarnessError as e:
        label = "not enough history" if e.exit_code == EXIT_SHORT_HISTORY else "error"
        print(f"{label}: {e}", file=sys.stderr)
        return e.exit_code
