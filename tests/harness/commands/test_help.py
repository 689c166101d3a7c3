"""Every command's ``--help`` says what the code does: each option has help, each default it
names is the option's real one, and the shared flags read the same in every command that takes
them. Unit tier: the parsers alone."""

from __future__ import annotations

import argparse
import re

import pytest

from harness.commands import COMMANDS, build_parser
from harness.commands.shared import ACROSS_MIN_EFFECT, ENVS, PAIRED_MIN_EFFECT, RUN_MIN_EFFECT
from tools.reference import _subparsers

PARSERS = _subparsers(build_parser()).choices


def _options(command: str) -> list[argparse.Action]:
    return [a for a in PARSERS[command]._actions if a.option_strings and a.help is not argparse.SUPPRESS]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_has_help(command: str) -> None:
    assert not [a.option_strings for a in _options(command) if not a.help]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_default_the_help_names_is_the_option_s_own(command: str) -> None:
    for action in _options(command):
        if "(default: the sweep's)" in action.help:  # the sweep's only where the option has none
            assert action.default is None, (command, action.option_strings)
        said = re.search(r"[Dd]efault: ([^ ;,)]+)", action.help)
        if said is None or action.default in (None, False, []):
            continue
        value = f"{action.default:g}" if isinstance(action.default, float) else str(action.default)
        assert said.group(1).rstrip(".") == value, (command, action.option_strings, action.help)


def test_bisect_s_budget_is_its_own_not_the_sweep_s() -> None:
    budget = PARSERS["bisect"]._option_string_actions["--budget-min"]
    assert budget.default == 120.0 and budget.help.endswith("(default: 120)")
    assert PARSERS["run"]._option_string_actions["--budget-min"].help.endswith("(default: the sweep's)")


def test_the_breakdown_help_says_when_and_where_it_is_timed() -> None:
    # launch.instances.breakdowns: after the turns, one process per cell, alone on the machine
    text = PARSERS["run"]._option_string_actions["--breakdown"].help
    assert "after the turns" in text and "alone on the machine" in text and "first instance" not in text


@pytest.mark.parametrize(
    "flag", ["--min-pairs", "--max-pairs", "--min-effect", "--results", "--wait-lock", "--json"]
)
def test_the_paired_commands_share_their_flags(flag: str) -> None:
    actions = [PARSERS[c]._option_string_actions[flag] for c in ("ab", "nightly", "bisect")]
    assert len({(type(a), a.type, a.metavar) for a in actions}) == 1
    if flag == "--min-effect":
        assert {a.default for a in actions} == {PAIRED_MIN_EFFECT}
    if flag == "--wait-lock":
        assert len({a.help for a in actions}) == 1


MIN_EFFECTS = {
    "run": None,  # the sweep's protocol's, RUN_MIN_EFFECT
    "compare": ACROSS_MIN_EFFECT,
    "ab": PAIRED_MIN_EFFECT,
    "nightly": PAIRED_MIN_EFFECT,
    "bisect": PAIRED_MIN_EFFECT,
    "compare-hardware": ACROSS_MIN_EFFECT,
    "compare-links": ACROSS_MIN_EFFECT,
}


def test_min_effect_is_one_flag_with_its_kind_s_default() -> None:
    taken = {
        c: p._option_string_actions["--min-effect"]
        for c, p in PARSERS.items()
        if "--min-effect" in p._option_string_actions
    }
    assert {c: a.default for c, a in taken.items()} == MIN_EFFECTS
    assert {a.metavar for a in taken.values()} == {"FRACTION"}
    assert taken["run"].help.endswith(f"Default: the sweep's, {RUN_MIN_EFFECT:g}")


def test_nightly_and_bisect_build_environments_in_one_folder() -> None:
    assert {PARSERS[c]._option_string_actions["--envs"].default for c in ("nightly", "bisect")} == {ENVS}
