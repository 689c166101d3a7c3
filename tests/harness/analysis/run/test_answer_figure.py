"""The answer figure: both files written, nothing when nothing was measured, a point without a CI."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from harness.analysis.run.answer_figure import Bar, Panel, _whiskers, draw, ordered, percent, ticks

PNG = b"\x89PNG\r\n\x1a\n"


def _cnn() -> Panel:
    return Panel(
        "CNN (MNIST convnet)",
        (
            Bar("plain custom loop", 0.866, 0.836, 0.897, "lower"),
            Bar("no strategy, 4 accumulation steps", 1.0, None, None, "leader"),
            Bar(
                "ParameterServerStrategy, 2 workers and 1 parameter server", None, None, None, "not measured"
            ),
            Bar("MirroredStrategy on 2 replicas", 0.943, 0.893, 0.997, "undecided"),
        ),
    )


def _dense() -> Panel:
    return Panel(
        "Dense (MNIST multilayer perceptron)",
        (
            Bar("no strategy", 1.0, None, None, "leader"),
            Bar("Keras fit", 0.99, 0.97, 1.01, "equivalent"),
            Bar("MirroredStrategy on 2 replicas", 1.08, 1.055, 1.11, "higher"),
        ),
    )


def test_two_panels_write_a_png_and_an_svg(tmp_path: Path) -> None:
    paths = draw([_cnn(), _dense()], 0.05, tmp_path / "figures")
    assert [p.name for p in paths] == ["answer.png", "answer.svg"]
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert paths[0].read_bytes()[:8] == PNG
    assert b"<svg" in paths[1].read_bytes()[:1000]


def test_nothing_measured_draws_nothing(tmp_path: Path) -> None:
    missing = Panel("CNN", (Bar("Keras fit", None, None, None, "not measured"),))
    assert draw([missing, Panel("Dense", ())], 0.05, tmp_path) == []
    assert draw([], 0.05, tmp_path) == []
    assert not list(tmp_path.iterdir())


def test_a_point_without_a_ci_draws_without_whiskers(tmp_path: Path) -> None:
    bars = (
        Bar("no strategy", 1.0, None, None, "leader"),
        Bar("Keras fit", 0.9, None, None, "lower"),
        Bar("plain custom loop", 0.95, None, 0.97, "undecided"),
    )
    assert len(draw([Panel("CNN", bars)], 0.05, tmp_path, stem="bare")) == 2
    assert _whiskers(bars[1]) is None and _whiskers(bars[2]) is None
    assert _whiskers(Bar("fit", 0.9, 0.85, 0.97, "lower")) == [[0.9 - 0.85], [0.97 - 0.9]]


def test_leader_first_then_by_ratio_then_not_measured() -> None:
    assert [b.label for b in ordered(_cnn().bars)] == [
        "no strategy, 4 accumulation steps",
        "MirroredStrategy on 2 replicas",
        "plain custom loop",
        "ParameterServerStrategy, 2 workers and 1 parameter server",
    ]


def test_ticks_are_round_percentages_around_the_leader() -> None:
    assert [percent(t, digits=0) for t in ticks(0.7, 1.12)] == [
        "\u221230%",
        "\u221220%",
        "\u221210%",
        "0",
        "+10%",
    ]
    assert 1.0 in ticks(0.05, 4.0) and len(ticks(0.05, 4.0)) <= 8
    assert percent(0.866) == "\u221213.4%" and percent(1.08) == "+8.0%" and percent(1.0) == "0"
