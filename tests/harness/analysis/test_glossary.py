"""The glossary (harness/analysis/glossary.py): one source for docs/explanation/glossary.md and the
report's pages. Unit tier: no TensorFlow, no process."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis import glossary
from harness.analysis.glossary import REGENERATE, TERMS, Term, html, markdown
from harness.commands.reference import main

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "explanation" / "glossary.md"


def test_committed_page_is_the_generated_text() -> None:
    assert PAGE.is_file(), f"{PAGE} is missing; generate it: {REGENERATE}"
    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        f"{PAGE.relative_to(REPO)} differs from harness/analysis/glossary.py; regenerate it: {REGENERATE}"
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


@pytest.mark.parametrize(
    "word",
    [
        "configuration",
        "leader",
        "contender",
        "measured in turns",
        "instance",
        "block",
        "replica",
        "worker",
        "parameter server",
        "gradient accumulation",
        "steps per execution",
        "custom loop (ctl)",
        "Keras fit (fit)",
        "cross-device ops",
        "all-reduce",
        "scaling efficiency",
        "95% CI",
        "higher",
        "lower",
        "equivalent",
        "undecided",
        "unstable",
        "MFU",
        "bound",
        "co-tenant",
    ],
)
def test_the_terms_the_output_keeps_are_there(word: str) -> None:
    assert word in {t.word for t in TERMS}


def test_every_term_is_a_row_of_the_page() -> None:
    md = markdown()
    for t in TERMS:
        word, meaning = (text.replace("|", r"\|") for text in (t.word, t.meaning))
        assert f"| **{word}** | {meaning} |" in md


def test_html_is_a_definition_list_that_escapes(monkeypatch: pytest.MonkeyPatch) -> None:
    out = html()
    assert out.startswith("<dl") and out.endswith("</dl>")
    assert out.count("<dt>") == len(TERMS) == out.count("<dd>")
    monkeypatch.setattr(glossary, "TERMS", (Term("a<b>", 'x & "y" <script>'),))
    assert (
        html() == '<dl class="glossary"><dt>a&lt;b&gt;</dt><dd>x &amp; &#34;y&#34; &lt;script&gt;</dd></dl>'
    )


def test_markdown_escapes_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glossary, "TERMS", (Term("a|b", "x | y."),))
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
