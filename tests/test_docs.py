"""The documents the code and the pages cite exist, and the README stays a front page.

``nox -s docs`` builds the site strictly (a broken link between pages fails it); these checks cover
what the site build does not see: the README's links (GitHub renders it, mkdocs does not) and the
``docs/...`` paths that modules, tests and benchmarks name in their docstrings and messages.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 100
"""The README is a front page: what the suite answers, the two commands, what a run gives, what
to type next; everything else lives in docs/."""

CITED = re.compile(r"\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(?:md|yml)\b")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _sources() -> list[Path]:
    files = [REPO / "README.md", REPO / "noxfile.py", REPO / "pyproject.toml", REPO / "mkdocs.yml"]
    for folder in ("harness", "tests", "benchmarks"):
        files += sorted((REPO / folder).rglob("*.py"))
    files += sorted((REPO / "docs").rglob("*.md")) + sorted((REPO / "docs").rglob("*.yml"))
    return [f for f in files if f.is_file()]


def test_the_readme_fits_on_a_screen():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines; at most {README_MAX_LINES}: move detail to docs/"
    )


def test_every_link_of_the_readme_resolves():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if "://" not in t]
    assert targets, "the README links into docs/"
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_cited_document_exists():
    missing = {
        f"{path.relative_to(REPO)}: {cited}"
        for path in _sources()
        for cited in CITED.findall(path.read_text(encoding="utf-8"))
        if not (REPO / cited).exists()
    }
    assert not missing, f"documents cited but not in the repository: {sorted(missing)}"


def test_no_module_cites_a_document_outside_the_repository():
    outside = [
        str(p.relative_to(REPO))
        for p in _sources()
        if p != Path(__file__) and re.search(r"\bDESIGN\.md\b|TF_NOTES\.md", p.read_text(encoding="utf-8"))
    ]
    assert not outside, f"these cite a design document that is not in the repository: {outside}"


COMMAND = re.compile(r"(?:python3? -m harness|tf-strategy-bench)(?= |$)(.*)")
"""A command line of the suite's CLI, and the rest of its line."""

PROSE_END = re.compile(r"`|\s[|;&>]|\s#|\)\s*$")
"""Where a command quoted in prose or a shell line ends: a closing backtick, a pipe, `;`, `&&`, a
redirection or a comment."""


def _joined(lines: list[str], i: int, start: int) -> tuple[str, int]:
    """The text of ``lines[i]`` from ``start``, continued while it ends in a backslash (a shell
    line) or sits in inline code that the line does not close (prose wrapped mid-command)."""
    rest, j = lines[i][start:], i
    in_code = lines[i][:start].count("`") % 2 == 1
    while j + 1 < len(lines) and (
        rest.rstrip().endswith("\\") or (in_code and "`" not in rest and lines[j + 1].strip())
    ):
        j += 1
        rest = rest.rstrip().removesuffix("\\") + " " + lines[j].strip()
    return rest, j


def _command_lines() -> list[tuple[str, list[str]]]:
    """(where, arguments) of every command line of the CLI in README.md and docs/ (pages and the
    CI examples in docs/ci/*.yml; not docs/evidence, records of what was typed at the commit each
    names). Not command lines: a usage synopsis (``[-h]``), a placeholder (``COMMAND --help``), the
    program named alone, elided ones (``...``)."""
    import shlex

    docs = [*sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "docs").rglob("*.yml"))]
    files = [REPO / "README.md", *(p for p in docs if "evidence" not in p.relative_to(REPO).parts)]
    found = []
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            for match in COMMAND.finditer(line):
                rest, _ = _joined(lines, i, match.start(1))
                end = PROSE_END.search(rest)
                rest = rest[: end.start()] if end else rest
                try:
                    args = shlex.split(rest)
                except ValueError:
                    args = rest.split()
                synopsis = any(a.startswith("[") for a in args)
                placeholder = bool(args) and args[0].isupper()
                elided = any(a.endswith("...") for a in args)
                if args and not (synopsis or placeholder or elided):
                    found.append((f"{path.relative_to(REPO)}:{i + 1}", args))
    return found


def test_every_command_line_in_the_docs_parses_with_the_real_parser():
    import contextlib
    import io

    from harness.commands import COMMANDS, build_parser

    commands = _command_lines()
    assert len(commands) > 50, "the docs quote the CLI"
    bad = []
    for where, args in commands:
        if args in ([name] for name in COMMANDS) or args == ["--version"]:  # named in prose; --version
            continue  # would run git to print the commit (a test of its own covers it)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(args)
        except SystemExit as e:
            if e.code:
                bad.append(f"{where}: {' '.join(args)}\n    {err.getvalue().strip().splitlines()[-1]}")
    assert not bad, "command lines the parser refuses:\n" + "\n".join(bad)


RECORDED_RUN = REPO / "docs" / "evidence" / "2026-11-27-answer-first"
"""The one recorded run whose answer README.md quotes."""


def test_the_development_page_names_the_packages_there_are():
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    block = text[text.index("    harness/\n") : text.index("    benchmarks/")]
    named = set(re.findall(r"^ {6}(\w+)/", block, re.M))
    packages = {p.parent.name for p in (REPO / "harness").glob("*/__init__.py")}
    assert named == packages, f"docs/development.md names {sorted(named)}; harness/ has {sorted(packages)}"


def _answer_of(results: Path) -> list[str]:
    """The answer ``run`` ends on, for the run recorded in ``results``."""
    from harness.analysis.run import answer
    from harness.contract.columns import unflatten_all
    from harness.contract.records import CellRow, RatioRow
    from harness.results import history

    cells, _ = history.load([results])
    rows = unflatten_all(CellRow, cells.to_dict("records"))
    ratios = unflatten_all(RatioRow, history.load_table([results], "ratios").to_dict("records"))
    return answer.text(answer.answers(rows, ratios), rows).splitlines()


def test_the_readme_quotes_what_this_commit_prints(tmp_path):
    """The README's answer is the one the code prints today for the recorded run it cites (a line
    ending in ``[...]`` is cut there)."""
    import tarfile

    with tarfile.open(RECORDED_RUN / "results.tgz") as tar:
        tar.extractall(tmp_path, filter="data")
    printed = _answer_of(tmp_path / "results")
    text = (REPO / "README.md").read_text(encoding="utf-8")
    quoted = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(quoted) > 10
    for line in quoted:
        if line.endswith("[...]"):
            assert any(p.startswith(line.removesuffix("[...]")) for p in printed), line
        else:
            assert line in printed, f"README.md quotes a line the code no longer prints: {line!r}"


def test_the_laptop_page_s_axis_table_is_the_spec_s():
    """docs/how-to/laptop.md's axis table (hand-written): a row per axis, each named value the
    axis's own, in its order, and every token the replica axis takes besides integers."""
    from harness.spec.axes import AXES, REPLICA_TOKENS

    rows = {}
    for line in (REPO / "docs" / "how-to" / "laptop.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `--"):
            flags, values = line.strip("|").split(" | ")[:2]
            rows.update(dict.fromkeys(re.findall(r"`(--[a-z-]+)`", flags), values))
    for axis in AXES:
        assert axis.flag in rows, f"laptop.md's axis table has no row for {axis.flag}"
        values = rows[axis.flag]
        if axis.choices:
            named = [v.strip() for v in values.split(",") if re.fullmatch(r"[a-z0-9_]+", v.strip())]
            assert named == list(axis.choices), (axis.flag, values)
        else:
            assert values.startswith("integers"), (axis.flag, values)
    for token in set(REPLICA_TOKENS.values()):
        assert f"`{token}`" in rows["--replicas"], token


def test_doctor_and_the_tests_take_one_time_everywhere() -> None:
    """doctor's time is the same wherever a page gives it, and the tests' time is measured in one
    place only (docs/development.md), which the other pages link to."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    laptop = (REPO / "docs" / "how-to" / "laptop.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if "`python -m harness doctor`" in line)
    took = row.split("|")[3].strip()
    line = next(line for line in laptop.splitlines() if line.strip().startswith("python -m harness doctor "))
    assert f"({took})" in line, (took, line)
    timed = re.compile(r"\d+ min \d+ s")
    for page in (readme, laptop, (REPO / "docs" / "index.md").read_text(encoding="utf-8")):
        assert not timed.search(page), timed.search(page)
    development = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    assert len(set(timed.findall(development))) <= 2, timed.findall(development)  # pytest, .ci/run
