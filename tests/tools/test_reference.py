"""The generated CLI reference (docs/reference/cli.md): up to date with the parsers, complete, and
the same whatever the terminal's width. Unit tier: no TensorFlow, no process."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from harness.commands import COMMANDS, build_parser
from harness.results.store import TABLES
from harness.spec.sweeps import SWEEPS
from tools.reference import REGENERATE, _options, _subparsers, _usage, cli_markdown, main, schema_markdown

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reference" / "cli.md"


@pytest.fixture(scope="module")
def md() -> str:
    return cli_markdown()


def _argument_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string ``--help`` shows (a positional: its metavar or dest)."""
    return [
        name
        for action in parser._actions
        if action.help is not argparse.SUPPRESS
        for name in action.option_strings or [str(action.metavar or action.dest)]
    ]


def test_committed_page_is_up_to_date(md):
    assert PAGE.is_file(), f"{PAGE} is missing; generate it: {REGENERATE}"
    assert PAGE.read_text(encoding="utf-8") == md, (
        f"{PAGE.relative_to(REPO)} differs from what the parsers generate; regenerate it: {REGENERATE}"
    )


def test_every_command_has_a_section_in_order(md):
    headings = [line for line in md.splitlines() if line.startswith("## `")]
    assert headings == [f"## `{name}`" for name in COMMANDS]
    for name in COMMANDS:
        assert f"- [`{name}`](#{name}): " in md


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_is_listed(md, command):
    section = md.split(f"## `{command}`\n", 1)[1].split("\n## ", 1)[0]
    parser = _subparsers(build_parser()).choices[command]
    missing = [name for name in _argument_names(parser) if not re.search(f"`{re.escape(name)}[` ]", section)]
    assert not missing, f"missing from the section of {command}: {missing}"


def test_suppressed_options_are_left_out():
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--shown", help="kept")
    parser.add_argument("--hidden", help=argparse.SUPPRESS)
    table = _options(parser)
    assert "`--shown`" in table and "--hidden" not in table


def test_help_is_expanded_and_escaped():
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--n", type=int, default=7, help="count (default: %(default)s)\n a|b <x> *y")
    row = next(line for line in _options(parser).splitlines() if "`--n`" in line)
    assert row == r"| `--n` | `N` | `7` | count (default: 7) a\|b &lt;x> \*y |"


def test_usage_reads_as_argparse_writes_it(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # argparse's own line, unwrapped
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--kind", choices=("a", "b"))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--x", action="store_true")
    group.add_argument("--y", metavar="Y")
    parser.add_argument("--hidden", help=argparse.SUPPRESS)
    parser.add_argument("path", nargs="+")
    expected = "p [-h] --n N [--kind {a,b}] [--x | --y Y] path [path ...]"
    assert parser.format_usage() == f"usage: {expected}\n"
    assert _usage(parser) == f"```text\n{expected}\n```"


def test_every_named_sweep_is_listed(md):
    for name in SWEEPS:
        assert f"| `{name}` | " in md.split("## Named sweeps", 1)[1]


@pytest.mark.parametrize("columns", ["40", "300", None])
def test_output_ignores_the_terminal_width(md, monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli_markdown() == md


def test_check_fails_on_a_stale_page_and_names_the_command(tmp_path, capsys):
    page = tmp_path / "cli.md"
    assert main([str(page)]) == 0 and page.read_text(encoding="utf-8") == cli_markdown()
    assert main(["--check", str(page)]) == 0
    page.write_text(cli_markdown().replace("## `run`", "## `ran`"), encoding="utf-8")
    assert main(["--check", str(page)]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert main(["--check", str(tmp_path / "missing" / "cli.md")]) == 1
    with pytest.raises(SystemExit) as refused:  # a page it does not write: named with the ones it does
        main(["--check", str(tmp_path / "other.md")])
    assert refused.value.code == 2 and "cli.md, glossary.md" in capsys.readouterr().err


def test_schema_markdown_lists_every_column():
    md = schema_markdown()
    assert "### `cells` table" in md and "### `windows` table" in md
    for col in (*TABLES["cells"].columns, *TABLES["windows"].columns):
        assert f"| `{col.name}` | {col.type} |" in md


def test_results_readme_contains_schema_markdown():
    readme = REPO / "results" / "README.md"
    assert readme.is_file(), f"{readme} is missing; it must contain schema_markdown() verbatim"
    assert schema_markdown() in readme.read_text(encoding="utf-8")
