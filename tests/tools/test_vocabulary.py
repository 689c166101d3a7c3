"""One vocabulary: every shared concept's flag exists in its command, old spellings are refused
naming the new one, and every command's exit codes are in its help."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from harness.commands import COMMANDS, build_parser, module
from tools.reference import cli_markdown
from tools.vocabulary import CONCEPTS


def _parsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _table() -> dict[tuple[str, str], str]:
    """docs/reference/cli.md's vocabulary table as generated: (concept, command) -> its cell."""
    section = cli_markdown().split("## One vocabulary\n", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    commands = [c.strip(" `") for c in lines[0][1:]]
    return {
        (row[0].strip(), c): cell.strip(" `")
        for row in lines[1:]
        for c, cell in zip(commands, row[1:], strict=True)
    }


def test_the_vocabulary_table_is_what_the_parsers_take():
    """Each cell names exactly the concept's flags its command's parser has ("-": none of them),
    and a command that takes none has no column."""
    parsers, table = _parsers(), _table()
    for concept in CONCEPTS:
        for command, parser in parsers.items():
            have = [f for f in concept.flags if f in parser._option_string_actions]
            cell = table.get((concept.name, command))
            if cell is None:  # no column: the command takes no concept's flag
                assert not any(f in parser._option_string_actions for c in CONCEPTS for f in c.flags)
                continue
            named = cell.split(" (")[0]
            assert named == (", ".join(have) or "-"), (concept.name, command, cell)


def test_the_paired_commands_json_is_in_the_table():
    # the hand-kept table said ab and nightly had no --json and left bisect out
    table = _table()
    for command in ("ab", "nightly", "bisect", "run", "compare"):
        assert table["one JSON object on stdout", command] == "--json", command


OLD_SPELLINGS = {
    "run": ("--out",),
    "ab": ("--out", "--a", "--b", "--a-env", "--b-env"),
    "nightly": ("--out", "--reference", "--reference-env", "--alpha"),
    "compare": ("--alpha",),
    "report": ("--out",),
}
"""Flags the commands had before 2026-11-26."""
REQUIRED = {"nightly": ("--candidate", "c", "--baseline", "b"), "ab": ("--candidate", "c", "--baseline", "b")}


@pytest.mark.parametrize("command, old", [(c, o) for c, olds in OLD_SPELLINGS.items() for o in olds])
def test_an_old_spelling_stops_the_command(command: str, old: str) -> None:
    # never read as an abbreviation of a flag there now (ab --a was --accum-steps before)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        build_parser().parse_args([command, old, "x", *REQUIRED.get(command, ())])
    assert stop.value.code == 2 and "unrecognized arguments" in err.getvalue(), err.getvalue()


def test_every_command_lists_its_exit_codes_in_its_help():
    parsers = _parsers()
    for name in COMMANDS:
        exits = module(name).EXITS
        assert 0 in exits and 2 in exits, name
        assert parsers[name].epilog and parsers[name].epilog.startswith("Exit codes: 0 "), name
