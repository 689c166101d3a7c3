"""One vocabulary: every shared concept's flag exists in its command, old spellings are refused
naming the new one, and every command's exit codes are in its help."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from harness.commands import COMMANDS, build_parser
from harness.commands.vocabulary import CONCEPTS, RENAMED


def _parsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_concept_s_flag_is_its_command_s():
    parsers = _parsers()
    for concept in CONCEPTS:
        for command, flags in concept.flags.items():
            if not flags.startswith("--"):  # no flag: what the command does instead
                continue
            for flag in flags.split(" (")[0].split(", "):
                assert flag in parsers[command]._option_string_actions, (concept.name, command, flag)


@pytest.mark.parametrize("command, old, new", [(c, o, n) for c, f in RENAMED.items() for o, n in f.items()])
def test_an_old_spelling_is_refused_naming_the_new_one(command: str, old: str, new: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        build_parser().parse_args([command, old, "x"])
    assert stop.value.code == 2
    assert f"{old} is now {new}" in err.getvalue()
    assert new in _parsers()[command]._option_string_actions  # the new one is there


def test_every_command_lists_its_exit_codes_in_its_help():
    parsers = _parsers()
    for name, command in COMMANDS.items():
        module = command.load()
        assert 0 in module.EXITS and 2 in module.EXITS, name
        assert parsers[name].epilog and parsers[name].epilog.startswith("Exit codes: 0 "), name
