"""The ratios table `run` prints: undecided comparisons with the budget that would decide them."""

from __future__ import annotations

from harness.analysis.ratios_text import ratio_table, ratios_text, undecided_lines

ROWS = [
    {
        "relation": "scaling",
        "subject": "cnn/mirrored/r2",
        "reference": "cnn/mirrored/r1",
        "ratio": 0.512,
        "ratio_ci_low": 0.5,
        "ratio_ci_high": 0.52,
        "scale": 0.5,
        "instances": 9,
        "verdict": "equivalent",
        "decided": True,
        "note": "",
    },
    {
        "relation": "strategy",
        "subject": "cnn/mirrored/r1",
        "reference": "cnn/default/r1",
        "ratio": 0.98,
        "ratio_ci_low": 0.9,
        "ratio_ci_high": 1.07,
        "instances": 3,
        "verdict": "undecided",
        "decided": False,
        "extra_instances": 7,
        "extra_s": 210.0,
        "note": "",
    },
    {
        "relation": "loop",
        "subject": "a",
        "reference": "b",
        "ratio": None,
        "decided": False,
        "note": "not measured in turns: a failed",
    },
]


def test_the_table_marks_undecided_and_unmeasured() -> None:
    header, lines = ratio_table(ROWS)
    assert header[0] == "comparison" and lines[0][2:4] == ["0.512", "[0.500, 0.520]"]
    # an efficiency of one half whose speed-up is within 5 % of 1: said of the speed-up
    assert lines[0][-1] == "equivalent: no faster than one device"
    assert lines[1][-1] == "undecided"
    assert lines[2][2] == "-" and lines[2][-1].startswith("not measured in turns")


def test_undecided_lines_give_instances_and_minutes() -> None:
    (line,) = undecided_lines(ROWS)
    assert "about 7 more instances (~3.5 min of budget)" in line


def test_the_text_says_how_the_ratios_were_obtained() -> None:
    text = ratios_text(ROWS, 0.2, 6)
    assert "turns of ~0.2 s" in text and "6 blocks" in text and "undecided: 1 of 3" in text
    assert ratios_text([], 0.2, 6) == ""
