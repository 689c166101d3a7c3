"""``ab``'s markdown for a CI comment (harness/analysis/versions/ab_text.py): title, table, sides, method."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.analysis.versions.ab import Decision, Rule
from harness.analysis.versions.ab_text import markdown
from harness.spec.cell import Cell

CELL = Cell(model="dense", strategy="default", batch=32)


@dataclass(frozen=True)
class Outcome:
    cell: Cell
    mode: str
    ratios: Sequence[float]
    decision: Decision
    failure: str = ""
    software: Mapping[str, str] = field(default_factory=dict)


def test_the_markdown_has_the_verdict_the_table_each_side_and_the_rule() -> None:
    nan = float("nan")
    outcomes = [
        Outcome(
            CELL,
            "turns",
            (0.5, 0.6),
            Decision(0.55, 0.5, 0.6, 2, "lower"),
            "",
            {"B": "tf 2.17", "A": "tf|2.16"},
        ),
        Outcome(CELL, "turns", (), Decision(nan, nan, nan, 0, "undecided"), "crash|here"),
    ]
    text = markdown(outcomes, "regression", Rule(min_effect=0.05, min_pairs=3, max_pairs=9))
    assert text.startswith(
        "### **Performance regression (B slower than A)**\n\n| cell | mode | B/A | 95% CI |"
    )
    assert f"| {CELL.id} | turns | 0.550 | 0.500..0.600 | 2 | lower |\n" in text
    assert f"| {CELL.id} | turns | - | - | 0 | failed: crash/here |\n" in text  # a pipe never splits a cell
    assert "\n\n- side A: tf|2.16\n- side B: tf 2.17\n\nPairs of fresh processes" in text
    assert text.endswith("beyond 5% of 1, equivalent when it lies within it, after 3 to 9 pairs.\n")
    assert "\n\n\nPairs of fresh" in markdown(outcomes[1:], "a cell failed", Rule())  # no sides known
    assert markdown([], "undecided", Rule()).startswith("### Undecided within the budget\n")
