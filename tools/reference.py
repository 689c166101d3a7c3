"""The generated docs pages: the command-line reference from the argparse parsers themselves, the
glossary from :mod:`harness.analysis.pages.glossary`, and results/README.md's column tables from the
schema (:mod:`harness.results.store`, :mod:`harness.contract.outputs`).

``python -m tools.reference docs/reference/cli.md`` (from the repository root) writes one; with
``--check`` it only compares, and exits 1 when the committed page differs from what the code says
now (the docs CI session runs that). :func:`cli_markdown` is pure: no TensorFlow, no process, and
the usage lines are wrapped at :data:`WIDTH` columns whatever the terminal's ``COLUMNS``.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from harness.analysis.pages import glossary
from harness.commands import COMMANDS, build_parser
from harness.contract import outputs
from harness.results.store import TABLES
from harness.spec.axes import REPLICAS_TO_MAX
from harness.spec.protocol import Platform
from harness.spec.sweep import Sweep, expand
from harness.spec.sweeps import SWEEPS
from tools.vocabulary import concept_table

WIDTH = 100
"""Columns the usage lines are wrapped at (argparse would otherwise take the terminal's)."""
REGENERATE = "python -m tools.reference docs/reference/cli.md"
README = "python -m tools.reference results/README.md"
"""The command that rewrites results/README.md's column tables."""
"""The command that rewrites the page (named in the page's header and in every failure)."""
COUNT_PLATFORM = Platform()
"""The machine the sweeps' cell counts are given for: CPU only, 2 logical devices (the defaults)."""

_CODE_SPAN = re.compile(r"(`[^`]*`)")


def _text(text: str) -> str:
    """Help or description text as one line of Markdown: whitespace collapsed, ``|`` escaped
    (a table cell), and ``*`` and ``<`` escaped outside code spans (no stray emphasis or HTML)."""
    parts = _CODE_SPAN.split(" ".join(text.split()))
    plain = (p if p.startswith("`") else p.replace("*", r"\*").replace("<", "&lt;") for p in parts)
    return "".join(plain).replace("|", r"\|")


def _code(text: str) -> str:
    """``text`` as a code span (as escaped text where it holds a backtick or a ``|``)."""
    return _text(text) if "`" in text or "|" in text else f"`{text}`"


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The parser's subcommands action (``python -m harness COMMAND``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise ValueError(f"{parser.prog} has no subcommands")


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    """The parser's own help formatter, at :data:`WIDTH` columns and without colour."""
    cls = parser.formatter_class
    if not (isinstance(cls, type) and issubclass(cls, argparse.HelpFormatter)):
        cls = argparse.HelpFormatter
    formatter = cls(prog=parser.prog, width=WIDTH)
    no_colour = getattr(formatter, "_set_color", None)  # Python 3.14+ colours help on a terminal
    if no_colour is not None:
        no_colour(False)
    return formatter


def _usage_part(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """How usage writes one argument: ``--flag METAVAR`` (a flag alone), or a positional's metavar."""
    if not action.option_strings:
        return formatter._format_args(action, formatter._get_default_metavar_for_positional(action))
    if action.nargs == 0:
        return action.option_strings[0]
    metavar = formatter._get_default_metavar_for_optional(action)
    return f"{action.option_strings[0]} {formatter._format_args(action, metavar)}"


def _usage_parts(parser: argparse.ArgumentParser, formatter: argparse.HelpFormatter) -> list[str]:
    """The usage line's parts, as argparse orders them: the options (``[...]`` unless required; a
    mutually exclusive group as one ``[a | b]``), then the positionals."""
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    options: dict[int, str] = {}
    positionals: list[str] = []
    for action in (a for a in parser._actions if a.help is not argparse.SUPPRESS):
        group = groups.get(id(action))
        if group is not None:
            inner = " | ".join(_usage_part(a, formatter) for a in _shown(group._group_actions))
            options.setdefault(id(group), f"({inner})" if group.required else f"[{inner}]")
        elif not action.option_strings:
            positionals.append(_usage_part(action, formatter))
        else:
            part = _usage_part(action, formatter)
            options[id(action)] = part if action.required else f"[{part}]"
    return [*options.values(), *positionals]


def _usage(parser: argparse.ArgumentParser) -> str:
    """The parser's usage, wrapped at :data:`WIDTH` by this module (argparse's own wrapping
    differs between Python versions), as a fenced code block."""
    formatter = _formatter(parser)
    lines = [parser.prog]
    for part in _usage_parts(parser, formatter):
        if len(lines[-1]) + 1 + len(part) > WIDTH and lines[-1].strip():
            lines.append(" " * len(parser.prog))
        lines[-1] += " " + part
    return "```text\n" + "\n".join(lines) + "\n```"


def _shown(actions: Iterable[argparse.Action]) -> list[argparse.Action]:
    """The actions ``--help`` shows (not the subcommands, not those with help=SUPPRESS)."""
    return [
        a
        for a in actions
        if a.help is not argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
    ]


def _name(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """The option's flags (a positional: its metavar), as code spans."""
    if action.option_strings:
        return ", ".join(_code(s) for s in action.option_strings)
    return _code(formatter._format_args(action, formatter._get_default_metavar_for_positional(action)))


def _value(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """What the option takes: its choices, or its metavar; empty for a flag or a positional."""
    if action.nargs == 0 or not action.option_strings:
        return ""
    if action.choices is not None and action.metavar is None:
        return ", ".join(_code(str(c)) for c in action.choices)
    return _code(formatter._format_args(action, formatter._get_default_metavar_for_optional(action)))


def _default(action: argparse.Action) -> str:
    """The option's default; empty for a flag and where there is none (None, an empty list)."""
    default = action.default
    if action.nargs == 0 or default is None or default is argparse.SUPPRESS or default == []:
        return ""
    return _code(str(default))


def _row(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """One table row: flags | value | default | help (expanded as ``--help`` expands it)."""
    help_text = _text(formatter._expand_help(action)) if action.help else ""
    cells = (_name(action, formatter), _value(action, formatter), _default(action), help_text)
    return "| " + " | ".join(cells) + " |"


def _options(parser: argparse.ArgumentParser) -> str:
    """The parser's options as tables, one per argument group (titled where there are several)."""
    formatter = _formatter(parser)
    groups = [(g.title or "", _shown(g._group_actions)) for g in parser._action_groups]
    groups = [(title, actions) for title, actions in groups if actions]
    tables = []
    for title, actions in groups:
        head = f"**{_text(title[:1].upper() + title[1:])}**\n\n" if len(groups) > 1 else ""
        rows = "\n".join(_row(a, formatter) for a in actions)
        tables.append(f"{head}| option | value | default | help |\n|---|---|---|---|\n{rows}")
    return "\n\n".join(tables)


def _command(name: str, parser: argparse.ArgumentParser, summary: str) -> str:
    """One command's section: heading, summary, description, usage, options and exit codes."""
    about = [_text(t) for t in (summary, parser.description or "") if t]
    exits = [_text(parser.epilog)] if parser.epilog else []
    return "\n\n".join([f"## `{name}`", *about, _usage(parser), _options(parser), *exits])


def _vocabulary(parsers: dict[str, argparse.ArgumentParser]) -> str:
    """The shared concepts x the commands that take them, read off the parsers: each flag now, and
    the spelling it replaced."""
    commands, table = concept_table(parsers)
    head = "| concept | " + " | ".join(f"`{c}`" for c in commands) + " |"
    rule = "|---" * (len(commands) + 1) + "|"
    rows = [
        "| " + " | ".join([cells[0], *(_code(c) if c != "-" else c for c in cells[1:])]) + " |"
        for cells in table
    ]
    none = [f"`{name}`" for name in parsers if name not in commands]
    intro = (
        "One flag for one thing in every command. A spelling before 2026-11-26 (`--out`, `--a`, "
        "`--alpha`, ...) is an unknown flag and no flag is taken abbreviated, so an old script stops "
        "at once (exit 2) instead of running with a default it did not ask for."
        + (f" Taking none of these flags: {', '.join(none)}." if none else "")
    )
    return "\n\n".join(["## One vocabulary", intro, "\n".join([head, rule, *rows])])


def _header(parser: argparse.ArgumentParser) -> str:
    """The page's title, the do-not-edit note, the top-level usage and the list of commands."""
    commands = "\n".join(f"- [`{name}`](#{name}): {_text(text)}" for name, text in COMMANDS.items())
    note = (
        f"Generated from the argparse parsers by `{REGENERATE}`: do not edit this page by hand "
        "(a test fails when it is out of date). Each section is what the command's `--help` prints."
    )
    return "\n\n".join(
        [
            "# Command-line reference",
            note,
            _text(parser.description or ""),
            _usage(parser),
            commands,
        ]
    )


def _cell_count(sweep: Sweep) -> str:
    """The sweep's cell count on :data:`COUNT_PLATFORM`, marked when it grows with the replicas."""
    grows = REPLICAS_TO_MAX in sweep.values().get("replicas", ())
    return f"{len(expand(sweep, COUNT_PLATFORM))}{' †' if grows else ''}"


def _sweeps(parser: argparse.ArgumentParser) -> str:
    """The named sweeps of :mod:`harness.spec.sweeps`: name, cell count and description."""
    takers = [n for n, p in _subparsers(parser).choices.items() if "--sweep" in p._option_string_actions]
    rows = "\n".join(f"| `{s.name}` | {_cell_count(s)} | {_text(s.description)} |" for s in SWEEPS.values())
    intro = (
        f"What `--sweep NAME` selects (in {', '.join(f'[`{n}`](#{n})' for n in takers)}). Cells: "
        "what `python -m harness list --sweep NAME` counts on a CPU-only machine with 2 logical "
        "devices (`--cpu-devices 2`); † marks a sweep whose count grows with the machine's replicas."
    )
    return "\n\n".join(["## Named sweeps", intro, f"| sweep | cells | description |\n|---|---|---|\n{rows}"])


def cli_markdown() -> str:
    """The whole reference page: header, one section per command (in :data:`COMMANDS` order),
    then the named sweeps."""
    parser = build_parser()
    parsers = _subparsers(parser).choices
    sections = [_command(name, parsers[name], summary) for name, summary in COMMANDS.items()]
    return "\n\n".join([_header(parser), _vocabulary(parsers), *sections, _sweeps(parser)]) + "\n"


def schema_markdown() -> str:
    """The column tables of results/README.md, generated from the schema above."""
    out = []
    for table in TABLES.values():
        out.append(f"### `{table.folder}` table\n\n| column | type | unit | meaning |\n|---|---|---|---|")
        out.extend(f"| `{c.name}` | {c.type} | {c.unit} | {c.doc} |" for c in table.columns)
        out.append("")
    return "\n".join([*out, json_markdown()])


def _type_name(kind: object) -> str:
    """An annotation as the README writes it (``list[str]``, ``float | None``)."""
    text = getattr(kind, "__forward_arg__", kind)  # annotations are strings under __future__
    text = text if isinstance(text, str) else getattr(text, "__name__", str(text))
    return str(text).replace("typing.", "").replace("|", "or")


def json_markdown() -> str:
    """The ``--json`` objects (:mod:`harness.contract.outputs`): each command's keys and types."""
    out = [
        "## JSON output (`--json`)\n",
        " ".join(outputs.__doc__.split()) if outputs.__doc__ else "",
        "",
        "| command | holds | keys |",
        "|---|---|---|",
    ]
    for command, (kind, holds) in outputs.OUTPUTS.items():
        keys = ", ".join(f"`{k}` ({_type_name(t)})" for k, t in kind.__annotations__.items())
        out.append(f"| `{command}` | {holds} | {keys} |")
    nested = (outputs.ListedCell, outputs.SeriesOutput, outputs.PairedCell)
    out += [
        "",
        "Rows inside them: "
        + "; ".join(
            f"`{k.__name__}`: " + ", ".join(f"`{n}` ({_type_name(t)})" for n, t in k.__annotations__.items())
            for k in nested
        )
        + ". `cells`, `ratios` and `points` hold rows with the columns of the tables above.",
        "",
    ]
    return "\n".join(out)


README_MARKER = "## Columns\n"


def readme(path: Path) -> str:
    """results/README.md with its column tables (everything after README_MARKER) generated."""
    head = path.read_text(encoding="utf-8").split(README_MARKER)[0]
    return head + README_MARKER + "\n" + schema_markdown()


PAGES: dict[str, tuple[Callable[[Path], str], str, str]] = {
    "cli.md": (lambda _: cli_markdown(), "the parsers", REGENERATE),
    "glossary.md": (lambda _: glossary.markdown(), "harness/analysis/pages/glossary.py", glossary.REGENERATE),
    "README.md": (lambda path: readme(path), "harness/contract/records", README),
}
"""The generated pages by file name: what writes each, where it comes from, its regenerate command."""


def _check(path: Path, text: str, source: str, regenerate: str) -> int:
    """0 when ``path`` holds ``text``; else 1, printing what differs and how to regenerate it."""
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old == text:
        return 0
    diff = difflib.unified_diff(old.splitlines(), text.splitlines(), str(path), "generated", lineterm="")
    print("\n".join(list(diff)[:60]), file=sys.stderr)
    state = "is out of date" if old else "is missing"
    print(f"{path} {state} with {source}; regenerate it: {regenerate}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Write a generated page (:data:`PAGES`, by its file name) to the path given (with
    ``--check``: only compare); the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.reference",
        description="Write a generated page: the CLI reference (cli.md), the glossary (glossary.md) or the results schema (README.md).",
    )
    parser.add_argument(
        "path", type=Path, help="docs/reference/cli.md, docs/explanation/glossary.md or results/README.md"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the page differs; write nothing")
    args = parser.parse_args(argv)
    if args.path.name not in PAGES:
        parser.error(f"Received {args.path}; expected a page named one of: {', '.join(PAGES)}.")
    make, source, regenerate = PAGES[args.path.name]
    text = make(args.path)
    if args.check:
        return _check(args.path, text, source, regenerate)
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
