"""The report over a real run (a recorded `nox -s bench`): it opens with the answer and its
picture, names configurations in words (no cell id), every decimal it prints is a value of the
run's tables, and no two configurations of a model share a label."""

from __future__ import annotations

import html
import re

import pytest

from harness.analysis.run import answer, plots
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, RatioRow
from tests.harness.analysis.run.test_answer import ID, NUMBER, RUN, _matches, _values
from tests.support.figures import save_unrendered


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[CellRow], list[RatioRow]]:
    import tarfile

    from harness.analysis.pages.report import write_report
    from harness.results.history import load
    from harness.results.store import read

    root = tmp_path_factory.mktemp("run")
    with tarfile.open(RUN) as tar:
        tar.extractall(root, filter="data")
    results = next(root.rglob("cells")).parent
    cells, _ = load(results)
    ratios = read(results, "ratios")
    with pytest.MonkeyPatch.context() as mp:  # the pictures are test_report_figures'
        mp.setattr(plots, "save", save_unrendered)
        written = write_report(cells, root / "report", "a run", None, ratios)
    page = next(p for p in written if p.name == "report.html").read_text()
    rows = unflatten_all(CellRow, cells.to_dict("records"))
    return page, rows, unflatten_all(RatioRow, ratios.to_dict("records"))


def _text(page: str) -> str:
    """The page as a person reads it: no style, no embedded images, no tags, entities decoded."""
    page = re.sub(r"<style>.*?</style>", "", page, flags=re.S)
    page = re.sub(r'src="data:[^"]*"', "", page)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_the_report_opens_with_the_answer_and_its_picture(report) -> None:
    page, _, _ = report
    first = page.index("<h2>")
    assert page[first:].startswith("<h2>What to train with here</h2>")
    answer_part = page[first : page.index("<h2>", first + 1)]
    assert ": train with " in answer_part and 'alt="each configuration against the leader"' in answer_part


def test_the_report_names_no_cell_id(report) -> None:
    page, _, _ = report
    found = ID.search(_text(page))
    assert found is None, found


DECIMAL = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?%|\d[\d,]*\.\d+)")
"""A decimal as the report prints it: a number with a fraction, or a percentage."""

CONFIDENCE = "95%"
"""The confidence level of every CI: a setting of the method, not a measurement."""


def test_every_decimal_the_report_prints_is_a_value_of_the_run_s_tables(report) -> None:
    page, rows, ratios = report
    text = _text(page)
    # the glossary defines words with the defaults of the settings; it measures nothing
    text = text[: text.index("Words used here")] + text[text.index("Unstable") :]
    values = _values(rows, ratios)
    bad = []
    for m in DECIMAL.finditer(text):
        printed = m.group(1)
        if printed == CONFIDENCE:
            continue
        number = NUMBER.fullmatch(printed)
        assert number is not None
        if not _matches(number.group(1), number.group(2) == "%", values):
            bad.append((printed, text[max(m.start() - 50, 0) : m.end() + 5].replace("\n", " ")))
    assert not bad, bad


def test_no_two_configurations_of_a_model_share_a_label(report) -> None:
    _, rows, _ = report
    named = answer.labels(rows)
    seen: dict[tuple[str, str], str] = {}
    for r in rows:
        key = (r.cell.model, named[r.cell.cell_id])
        assert seen.setdefault(key, r.cell.cell_id) == r.cell.cell_id, key


def test_every_label_the_answer_prints_is_the_report_s_for_that_configuration(report) -> None:
    page, rows, ratios = report
    named = answer.labels(rows)
    for a in answer.answers(rows, ratios):
        assert a.label == named[a.leader.cell.cell_id]
        for v in a.versus:
            assert v.label == named[v.row.cell.cell_id]
            assert html.escape(v.label) in page
