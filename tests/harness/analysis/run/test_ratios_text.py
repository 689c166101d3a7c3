"""The ratios table `run` prints: undecided comparisons with the budget that would decide them."""

from __future__ import annotations

from harness.analysis.run.ratios_text import ratio_table, ratios_text, undecided_lines
from harness.contract.columns import Estimate
from harness.contract.records import RatioRow
from harness.spec.groups import Relation


def _row(**columns: object) -> RatioRow:
    """A ratio row with these fields; its bookkeeping (group, blocks, turn, drops) neutral."""
    neutral: dict[str, object] = {
        "group": "g0",
        "scale": 1.0,
        "blocks": 6,
        "turn_s": 0.2,
        "dropped_instances": 0,
        "note": "",
        "disturbed_blocks": 0,
    }
    return RatioRow(**{**neutral, **columns})  # type: ignore[arg-type]


ROWS = [
    _row(
        relation=Relation.SCALING,
        subject="cnn/mirrored/r2",
        reference="cnn/mirrored/r1",
        ratio=Estimate(0.512, 0.5, 0.52),
        scale=0.5,
        instances=9,
        verdict="equivalent",
        decided=True,
    ),
    _row(
        relation=Relation.STRATEGY,
        subject="cnn/mirrored/r1",
        reference="cnn/default/r1",
        ratio=Estimate(0.98, 0.9, 1.07),
        instances=3,
        verdict="undecided",
        decided=False,
        extra_instances=7,
        extra_s=210.0,
    ),
    _row(
        relation=Relation.LOOP,
        subject="a",
        reference="b",
        ratio=Estimate(),
        instances=0,
        verdict="not measured",
        decided=False,
        note="not measured in turns: a failed",
    ),
]


def test_the_table_marks_undecided_and_unmeasured() -> None:
    header, lines = ratio_table(ROWS)
    assert header[:4] == ["model", "comparison", "configuration", "against"]
    assert lines[0][1] == "scaling efficiency" and lines[0][4:6] == ["0.512", "[0.500, 0.520]"]
    # an efficiency of one half whose speed-up is within 5 % of 1: said of the speed-up
    assert lines[0][-1] == "equivalent: no faster than one device"
    assert lines[1][-1] == "undecided"
    assert lines[2][4] == "-" and lines[2][-1].startswith("not measured in turns")


def test_undecided_lines_give_instances_and_minutes() -> None:
    (line,) = undecided_lines(ROWS)
    assert "about 7 more instances (~3.5 min of budget)" in line


def test_the_text_says_how_the_ratios_were_obtained() -> None:
    text = ratios_text(ROWS, 0.2, 6)
    assert "turns of ~0.2 s" in text and "6 pairs of turns" in text and "undecided: 1 of 3" in text
    assert ratios_text([], 0.2, 6) == ""
