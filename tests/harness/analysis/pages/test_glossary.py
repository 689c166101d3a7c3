"""The glossary (harness/analysis/pages/glossary.py): one source for docs/explanation/glossary.md and the
report's pages. Unit tier: no TensorFlow, no process."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from harness.analysis.pages import glossary
from harness.analysis.pages.glossary import REGENERATE, TERMS, Word, markdown
from harness.analysis.run import render
from harness.formulas import verdicts
from tools.reference import main

REPO = Path(__file__).resolve().parents[4]
PAGE = REPO / "docs" / "explanation" / "glossary.md"


def test_committed_page_is_the_generated_text() -> None:
    assert PAGE.is_file(), f"{PAGE} is missing; generate it: {REGENERATE}"
    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        f"{PAGE.relative_to(REPO)} differs from harness/analysis/pages/glossary.py; regenerate it: {REGENERATE}"
    )


def test_the_page_is_in_the_site_s_nav_and_linked_from_the_index() -> None:
    assert "- explanation/glossary.md" in (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert "(explanation/glossary.md)" in (REPO / "docs" / "index.md").read_text(encoding="utf-8")


def test_every_term_is_unique_and_means_something() -> None:
    words = [t.word.casefold() for t in TERMS]
    assert len(words) == len(set(words)), sorted(w for w in words if words.count(w) > 1)
    for t in TERMS:
        assert t.word.strip() == t.word and t.word, t
        assert t.meaning.strip() and t.meaning.rstrip().endswith("."), t


PRINTED = (
    "configuration",
    "leader",
    "closest rival",
    "measured in turns",
    "turn",
    "instance",
    "block",
    "replica",
    "worker",
    "parameter server",
    "gradient accumulation",
    "steps per execution",
    "custom loop",
    "Keras fit",
    "cross-device ops",
    "all-reduce",
    "scaling efficiency",
    "95% CI",
    "false-discovery control",
    "unstable",
    "cv between / within processes",
    "MFU",
    "bound",
    "co-tenant",
    "oversubscribed",
    "machine",
    "run-to-run spread",
    "fingerprint",
    "series",
    "robust z-score",
    "family-wise alpha",
    "change point",
    "pin",
)
"""Terms of art the output prints; with every verdict word (:data:`VERDICTS`), each needs an entry."""

VERDICTS = tuple(
    value
    for name, value in vars(verdicts).items()
    if name.isupper() and isinstance(value, str) and " " not in name
)
"""The verdict words, from :mod:`harness.formulas.verdicts` (higher, lower, equivalent, undecided,
not measured)."""


def _names(t: Word) -> set[str]:
    """What a term is printed as: its word, the word without its parenthesis, and what the
    parenthesis holds (``custom loop (ctl)``: ``custom loop``, ``ctl``)."""
    head, _, rest = t.word.partition(" (")
    return {t.word, head, rest.removesuffix(")")} - {""}


@functools.cache
def _printed() -> str:
    """What harness/ can print, lower-cased: every string literal of its modules but the glossary's
    (f-strings' literal parts too; docstrings and attribute docs left out), and every template."""
    texts = []
    for path in (REPO / "harness").rglob("*.py"):
        if path == REPO / "harness" / "analysis" / "glossary.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        texts += [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
        ]
    texts += [p.read_text(encoding="utf-8") for p in (REPO / "harness" / "analysis" / "templates").iterdir()]
    return " ".join(" ".join(texts).split()).lower()


def _is_printed(word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word.lower())}(?!\w)", _printed()) is not None


def test_verdict_words_are_derived_from_the_verdicts_module() -> None:
    assert {"higher", "lower", "equivalent", "undecided", "not measured"} <= set(VERDICTS)


@pytest.mark.parametrize("word", PRINTED + VERDICTS)
def test_every_term_the_output_prints_has_an_entry(word: str) -> None:
    assert _is_printed(word), f"{word!r} is no longer printed: drop it from PRINTED"
    assert any(word.casefold() in {n.casefold() for n in _names(t)} for t in TERMS), (
        f"{word!r} is printed but defined nowhere: add a Word to harness/analysis/pages/glossary.py"
    )


@pytest.mark.parametrize("term", TERMS, ids=lambda t: t.word)
def test_every_term_is_printed_somewhere(term: Word) -> None:
    assert any(_is_printed(n) for n in _names(term)), (
        f"{term.word!r} appears in no harness/ string or template: the output no longer uses it"
    )


def test_every_term_is_a_row_of_the_page() -> None:
    md = markdown()
    for t in TERMS:
        word, meaning = (text.replace("|", r"\|") for text in (t.word, t.meaning))
        assert f"| **{word}** | {meaning} |" in md


def html() -> str:
    """The report's glossary: its template, as the report includes it."""
    return render.page("glossary.html", terms=glossary.TERMS)


def test_html_is_a_definition_list_that_escapes(monkeypatch: pytest.MonkeyPatch) -> None:
    out = html()
    assert out.startswith("<dl") and out.endswith("</dl>")
    assert out.count("<dt>") == len(TERMS) == out.count("<dd>")
    monkeypatch.setattr(glossary, "TERMS", (Word("a<b>", 'x & "y" <script>'),))
    assert (
        html() == '<dl class="glossary"><dt>a&lt;b&gt;</dt><dd>x &amp; &#34;y&#34; &lt;script&gt;</dd></dl>'
    )


def test_markdown_escapes_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glossary, "TERMS", (Word("a|b", "x | y."),))
    assert r"| **a\|b** | x \| y. |" in markdown()


def test_check_fails_on_a_stale_page_and_writing_fixes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "glossary.md"
    page.write_text("# Glossary\n\nold\n", encoding="utf-8")
    assert main([str(page), "--check"]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert main([str(page)]) == 0
    assert main([str(page), "--check"]) == 0
    assert page.read_text(encoding="utf-8") == markdown()
