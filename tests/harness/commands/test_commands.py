"""One module per command, chosen from a dict; one error type whose exit code the dispatcher returns."""

from __future__ import annotations

import pytest

from harness.analysis.gate import GatePolicy
from harness.commands import COMMANDS, build_parser, main
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
        "ingest",
        "doctor",
        "check",
        "pack",
    ]
    for name, module in COMMANDS.items():
        assert name == module.NAME and callable(module.add_parser) and callable(module.run)
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(choices) == list(COMMANDS)


def test_a_harness_error_becomes_its_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def short(args: object) -> int:
        raise HarnessError("the history holds 1 run", EXIT_SHORT_HISTORY)

    monkeypatch.setattr(COMMANDS["report"], "run", short)
    assert main(["report"]) == EXIT_SHORT_HISTORY
    assert capsys.readouterr().err == "not enough history: the history holds 1 run\n"
    monkeypatch.setattr(
        COMMANDS["report"],
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
