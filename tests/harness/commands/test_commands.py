"""One module per command, chosen from a dict; one error type whose exit code the dispatcher returns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis.comparisons.gate import GatePolicy
from harness.commands import COMMANDS, build_parser, main, module
from harness.errors import EXIT_SHORT_HISTORY, EXIT_USAGE, HarnessError


def test_every_command_module_has_its_parser_and_runner() -> None:
    assert list(COMMANDS) == [
        "run",
        "list",
        "verify",
        "report",
        "compare",
        "ab",
        "nightly",
        "bisect",
        "compare-hardware",
        "compare-links",
        "predict",
        "doctor",
        "check",
        "pack",
    ]
    for name in COMMANDS:
        command = module(name)
        assert name == command.NAME and callable(command.add_parser) and callable(command.run)
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(choices) == list(COMMANDS)


def _listed(loaded: list[str] | None) -> dict[str, str]:
    """Command -> its line in ``python -m harness --help``, with ``loaded`` commands' flags added."""
    sub = build_parser(loaded)._subparsers._group_actions[0]  # type: ignore[union-attr]
    return {a.dest: a.help for a in sub._get_subactions()}


def test_the_top_level_help_lists_every_command_with_its_registry_line_unloaded_or_not() -> None:
    assert _listed([]) == COMMANDS == _listed(None)


@pytest.mark.process
def test_a_command_s_module_is_imported_only_when_it_runs() -> None:
    """``--help`` imports no command module; ``check --help`` imports check's alone."""
    probe = (
        "import contextlib, io, sys\n"
        "from harness.commands import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(sys.argv[1:])\n"
        "    except SystemExit: pass\n"
        "print(' '.join(sys.modules))\n"
    )
    commands = {module(name).__name__ for name in COMMANDS}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    for argv, imported in ((["--help"], set()), (["check", "--help"], {"harness.commands.check"})):
        out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env)
        assert commands & set(out.stdout.split()) == imported, out.stderr


def test_a_harness_error_becomes_its_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def short(args: object) -> int:
        raise HarnessError("the history holds 1 run", EXIT_SHORT_HISTORY)

    monkeypatch.setattr(module("report"), "run", short)
    assert main(["report"]) == EXIT_SHORT_HISTORY
    assert capsys.readouterr().err == "not enough history: the history holds 1 run\n"
    monkeypatch.setattr(
        module("report"),
        "run",
        lambda args: (_ for _ in ()).throw(HarnessError("Received --x=1; expected 2.")),
    )
    assert main(["report"]) == EXIT_USAGE
    assert capsys.readouterr().err == "error: Received --x=1; expected 2.\n"


@pytest.mark.parametrize(
    "field,value,flag",
    [
        ("min_effect", 1.0, "--min-effect"),
        ("z_threshold", 0.0, "--z"),
        ("min_history", 0, "--min-history"),
        ("alpha", 1.5, "--false-alarm"),
    ],
)
def test_the_gate_policy_validates_itself(field: str, value: float, flag: str) -> None:
    with pytest.raises(HarnessError, match=f"Received {flag}={value!r}; expected") as e:
        GatePolicy(**{field: value})
    assert e.value.exit_code == EXIT_USAGE
