"""The command line: ``python -m harness COMMAND ...``, one module per command.

Each command module has ``NAME``, ``EXITS`` (exit code -> what it means: ``--help`` and
docs/reference/cli.md list them), ``add_parser(subparsers, summary)`` and ``run(args) ->``
:class:`~harness.commands.output.CommandResult` (its exit code and ``--json`` object, which :func:`main`
prints); :data:`COMMANDS` names them, and a command's module is imported only when that command runs (or
its ``--help`` is asked for). Every command validates its input before any expensive work and
never imports TensorFlow (worker processes do). A :class:`~harness.errors.HarnessError`
raised anywhere below a command is printed here, once, and becomes the exit code it carries."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

from harness import __version__
from harness.commands.output import CommandResult
from harness.contract.outputs import OUTPUTS, dumps
from harness.errors import EXIT_SHORT_HISTORY, HarnessError

COMMANDS: dict[str, str] = {
    "run": "measure a sweep and append rows to the results dataset",
    "list": "print a sweep's cells, ids and which are unsupported (no TF)",
    "verify": "train cells for a fixed number of updates from one seed and check that cells which must be "
    "equivalent (same model, data, precision and examples per update) agree",
    "report": "figures (PNG, SVG) and one self-contained HTML file for a run",
    "compare": "the regression gate: compare a candidate run with baseline runs of the same cells on the "
    "same machine fingerprint",
    "ab": "compare two interpreters or settings in paired, interleaved processes: exit 0 no regression, 1 "
    "regression, 3 undecided",
    "nightly": "track a candidate build against a pinned reference, night after night: exit 0 no "
    "regression, 1 regression or a failed cell, 2 error, 3 undecided",
    "bisect": "find the TensorFlow nightly that brought a slowdown between a good and a bad build: an ab in "
    "turns per step, resumable",
    "compare-hardware": "which machine trains each model fastest, and for how much: each machine's own "
    "answer, ratios between machines with CIs that carry the run-to-run spread, cost per million examples "
    "and per epoch, energy where measured",
    "compare-links": "what a faster link between nodes buys: multi-node runs grouped by the link their "
    "chief measured, each faster link against the slowest with CIs that carry the run-to-run spread, the "
    "model of the step across nodes checked at each, and the answer for N nodes",
    "predict": "predict scaling on one machine from a 1-device cell and the all-reduce cost",
    "doctor": "what this machine can run: devices, build, threads, and a checked all-reduce through every "
    "strategy and cross-device op",
    "check": "read every file of a results folder: name the damaged ones and the runs to resume",
    "pack": "put runs of a results folder into one .tar.gz that report, compare, check and predict read as "
    "--results FILE",
}
"""Command name -> its one line in ``python -m harness --help``, in the order it lists them; its module
(:func:`module`) is imported only when it runs."""


def module(name: str) -> ModuleType:
    """Command ``name``'s module (``NAME``, ``EXITS``, ``add_parser``, ``run``), imported now."""
    return importlib.import_module(f"{__name__}.{'listing' if name == 'list' else name.replace('-', '_')}")


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

    from harness.launch.system.platform import git_sha

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


class _Parser(argparse.ArgumentParser):
    """The command line's parsers (the subcommands' too): no abbreviations, so an old or mistyped
    flag is refused, never read as a longer one."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_abbrev=False, **kwargs)


def build_parser(loaded: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; each command in ``loaded`` (default: all) with its flags, the others
    listed by name and help alone (their modules not imported)."""
    parser = _Parser(
        prog="python -m harness",
        description="Benchmark TensorFlow training of the MNIST CNN and a dense model under every "
        "tf.distribute strategy. Also installed as the command tf-strategy-bench.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    full = set(COMMANDS if loaded is None else loaded)
    for name, summary in COMMANDS.items():
        if name in full:
            command = module(name)
            exits = "; ".join(f"{code} {text}" for code, text in sorted(command.EXITS.items()))
            command.add_parser(sub, summary).epilog = f"Exit codes: {exits}."
        else:
            sub.add_parser(name, help=summary)
    return parser


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
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(arg for arg in argv[:1] if arg in COMMANDS)  # the command given, alone
    args = parser.parse_args(_no_bare_dashes(parser, argv))
    as_json = getattr(args, "json", False) and args.command in OUTPUTS
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():  # the object alone
        ended = _run(args)
    if as_json:
        print(dumps({"command": args.command, "exit_code": ended.code, **ended.output}))
    return ended.code


def _no_bare_dashes(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv``, refusing ``--flag=--`` (exit 2): argparse drops a ``--`` value and hands the flag
    an empty list instead of refusing it."""
    for arg in argv:
        if arg.startswith("--") and arg.endswith("=--"):
            parser.error(f"argument {arg[:-3]}: expected a value; received '--'")
    return argv


def _run(args: argparse.Namespace) -> CommandResult:
    """The command's outcome; a HarnessError printed, its outcome its exit code and ``error``."""
    try:
        return module(args.command).run(args)
    except HarnessError as e:
        label = "not enough history" if e.exit_code == EXIT_SHORT_HISTORY else "error"
        print(f"{label}: {e}", file=sys.stderr)
        return CommandResult(e.exit_code, {"error": str(e)})
