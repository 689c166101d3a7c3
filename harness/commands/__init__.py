"""The command line: ``python -m harness COMMAND ...``, one module per command.

Each command module has ``NAME``, ``add_parser(subparsers)`` and ``run(args) -> exit code``;
:data:`COMMANDS` chooses among them. Every command validates its input before any expensive
work and never imports TensorFlow (worker processes do). A :class:`~harness.errors.HarnessError`
raised anywhere below a command is printed here, once, and becomes the exit code it carries.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from harness import __version__
from harness.commands import (
    ab,
    bisect,
    check,
    compare,
    compare_hardware,
    compare_links,
    doctor,
    ingest,
    listing,
    nightly,
    output,
    pack,
    predict,
    report,
    run,
    verify,
)
from harness.contract.outputs import OUTPUTS, dumps
from harness.errors import EXIT_SHORT_HISTORY, HarnessError
from harness.launch.platform import git_sha

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
        bisect,
        compare_hardware,
        compare_links,
        predict,
        ingest,
        doctor,
        check,
        pack,
    )
}
"""Command name -> its module, in the order ``--help`` lists them."""


def version_text() -> str:
    """``tf-strategy-bench 0.1.0 (commit 1a2b3c4d5e6f), TensorFlow 2.21.0, Keras 3.15.1``: the suite
    and the installed TensorFlow and Keras, read from package metadata (the parent never imports
    TensorFlow)."""

    def installed(*names: str) -> str:
        for name in names:
            try:
                return version(name)
            except PackageNotFoundError:
                continue
        return "not installed"

    tf = installed("tensorflow", "tensorflow-cpu", "tf-nightly")
    return (
        f"tf-strategy-bench {__version__} (commit {git_sha() or 'unknown'}), TensorFlow {tf}, "
        f"Keras {installed('keras')}"
    )


class _Version(argparse.Action):
    """``--version``: print :func:`version_text` and exit 0 (computed only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            help="print the suite's version and commit, and the TensorFlow and Keras installed, then exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description="Benchmark TensorFlow training of the MNIST CNN and a dense model under every "
        "tf.distribute strategy. Also installed as the command tf-strategy-bench.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS.values():
        module.add_parser(sub).epilog = exits_text(module.EXITS)
    return parser


def exits_text(exits: dict[int, str]) -> str:
    """``Exit codes: 0 ...; 1 ...``: a command's :data:`EXITS` as its help's last line."""
    return "Exit codes: " + "; ".join(f"{code} {text}" for code, text in sorted(exits.items())) + "."


def console() -> None:
    """The ``tf-strategy-bench`` console script (and ``python -m harness``): :func:`main`'s exit
    code; a reader that left a pipe (``... | head``) ends it as SIGPIPE would."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + 13
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run the command, return its exit code (printing a HarnessError's message)."""
    if hasattr(sys.stdout, "reconfigure"):  # a path that is not UTF-8 prints escaped, as on stderr
        sys.stdout.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(_no_bare_dashes(parser, sys.argv[1:] if argv is None else list(argv)))
    if not (getattr(args, "json", False) and args.command in OUTPUTS):
        return _run(args)
    errors: list[str] = []
    with contextlib.redirect_stdout(sys.stderr):  # --json: stdout holds the object alone
        code = _run(args, errors)
    obj = {"command": args.command, "exit_code": code, **output.take()}
    print(dumps({**obj, "error": errors[0]} if errors else obj))
    return code


def _no_bare_dashes(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv``, refusing ``--flag=--`` (exit 2): argparse drops a ``--`` value and hands the flag
    an empty list instead of refusing it."""
    for arg in argv:
        if arg.startswith("--") and arg.endswith("=--"):
            parser.error(f"argument {arg[:-3]}: expected a value; received '--'")
    return argv


def _run(args: argparse.Namespace, errors: list[str] | None = None) -> int:
    """The command's exit code; a HarnessError printed (and appended to ``errors``) as its code."""
    try:
        return int(COMMANDS[args.command].run(args))
    except HarnessError as e:
        label = "not enough history" if e.exit_code == EXIT_SHORT_HISTORY else "error"
        print(f"{label}: {e}", file=sys.stderr)
        if errors is not None:
            errors.append(str(e))
        return e.exit_code
