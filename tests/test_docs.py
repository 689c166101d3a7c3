"""The documents the code and the pages cite exist, and the README stays a front page.

``nox -s docs`` builds the site strictly (a broken link between pages fails it); these checks cover
what the site build does not see: the README's links (GitHub renders it, mkdocs does not) and the
``docs/...`` paths that modules, tests and benchmarks name in their docstrings and messages.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150
"""The README is a front page: what the suite answers, the two commands, what a run gives, what
to type next; everything else lives in docs/."""

CITED = re.compile(r"\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(?:md|yml)\b")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _sources() -> list[Path]:
    files = [REPO / "README.md", REPO / "noxfile.py", REPO / "pyproject.toml", REPO / "mkdocs.yml"]
    for folder in ("harness", "tests", "benchmarks"):
        files += sorted((REPO / folder).rglob("*.py"))
    files += sorted((REPO / "docs").rglob("*.md"))
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
