"""Tests of harness.progress."""

from __future__ import annotations

import io
import re

import pytest

from harness.launch.cells.progress import Progress, format_eta

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Clock:
    """A settable clock for Progress."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def xterm(monkeypatch):
    """A plain colour terminal 120 columns wide, whatever the environment running the tests."""
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "120")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "seconds,text",
    [
        (0, "0:00"),
        (5, "0:05"),
        (59.6, "1:00"),
        (65, "1:05"),
        (600, "10:00"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (3725, "1:02:05"),
        (36000, "10:00:00"),
        (-12, "0:00"),
    ],
)
def test_format_eta(seconds, text):
    assert format_eta(seconds) == text


def test_plain_one_line_per_finished_cell():
    out, clock = io.StringIO(), Clock()
    p = Progress(3, stream=out, clock=clock)
    assert not p.tty
    p.show("cnn/default/r1w1/b64")
    clock.now = 30
    p.advance("cnn/default/r1w1/b64", "ok")
    p.show("cnn/mirrored[auto]/r2w1/b64")
    clock.now = 90
    p.advance("cnn/mirrored[auto]/r2w1/b64", "failed")
    p.close()
    text = out.getvalue()
    assert text.splitlines() == [
        "[1/3] cnn/default/r1w1/b64 ok  ETA 1:00",
        "[2/3] cnn/mirrored[auto]/r2w1/b64 failed  ETA 0:45",
    ]
    assert "\r" not in text and "\033" not in text


def test_plain_without_status():
    out = io.StringIO()
    p = Progress(1, stream=out)
    p.advance("a")
    assert out.getvalue() == "[1/1] a  ETA 0:00\n"


def test_force_terminal_overrides_detection(xterm, monkeypatch):
    assert Progress(1, stream=FakeTty()).tty
    assert not Progress(1, stream=FakeTty(), force_terminal=False).tty
    assert Progress(1, stream=io.StringIO(), force_terminal=True).tty
    monkeypatch.setenv("TERM", "dumb")  # cannot redraw a line: plain lines
    assert not Progress(1, stream=FakeTty()).tty


def test_terminal_shows_cell_counts_elapsed_and_eta(xterm):
    out, clock = io.StringIO(), Clock()
    p = Progress(3, stream=out, force_terminal=True, clock=clock)
    p.show("cnn/default/r1w1/b64")
    clock.now = 30
    p.advance("cnn/default/r1w1/b64", "ok")
    p.show("cnn/mirrored[auto]/r2w1/b64")
    clock.now = 40
    p.close()  # interrupted while the second cell runs
    raw = out.getvalue()
    assert "\x1b[" in raw  # drawn in place, in colour
    last = [line for line in ANSI.sub("", raw).replace("\r", "\n").splitlines() if line.strip()][-1]
    # the cell id is not taken for markup; ETA: 30 s per cell x 2 left - 10 s into the second
    assert "1/3" in last and "cnn/mirrored[auto]/r2w1/b64" in last
    assert "elapsed 0:40" in last and "ETA 0:50" in last
    assert "━" in last


def test_terminal_without_colour_under_no_color(xterm, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    with Progress(1, stream=out, force_terminal=True) as p:
        p.show("a")
        p.advance("a", "ok")
    codes = {int(c) for sgr in re.findall(r"\x1b\[([0-9;]*)m", out.getvalue()) for c in sgr.split(";") if c}
    assert not codes & {*range(30, 39), *range(40, 49), *range(90, 98)}
    assert "1/1" in ANSI.sub("", out.getvalue())


def test_terminal_finished_bar_says_done(xterm):
    out = io.StringIO()
    with Progress(2, stream=out, force_terminal=True) as p:
        for cell in ("a", "b"):
            p.show(cell)
            p.advance(cell, "ok")
    last = ANSI.sub("", out.getvalue()).replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("done") and "2/2" in last and "ETA 0:00" in last


def test_nothing_drawn_without_cells():
    out = FakeTty()
    Progress(0, stream=out, force_terminal=True).close()
    Progress(0, stream=out, force_terminal=False).close()
    assert out.getvalue() == ""


def test_eta_unknown_before_a_cell_finished():
    clock = Clock()
    p = Progress(4, stream=io.StringIO(), clock=clock)
    clock.now = 100
    assert p.eta() is None and p.eta_text() == "?"
    p.advance("a")
    clock.now = 500  # the second cell overran the mean: never below 0
    assert p.eta() == 0.0


def test_a_warning_stays_above_the_bar_on_a_terminal_and_is_a_line_elsewhere(xterm) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    with Progress(2, stream=out, force_terminal=True) as p:
        p.advance("g0 instance 1", "5 s")
        p.warn("warning: g0 instance 1, 4 of 4 blocks disturbed; busiest other program: yes[7], 0.97 CPUs")
    assert "busiest other program: yes[7], 0.97 CPUs" in ANSI.sub("", out.getvalue())
    plain = io.StringIO()
    Progress(2, stream=plain, force_terminal=False).warn("warning: busy")
    assert plain.getvalue() == "warning: busy\n"


def test_under_a_budget_the_count_has_no_total_and_the_clock_reads_the_budget() -> None:
    out, clock = io.StringIO(), Clock()
    p = Progress(3, stream=out, clock=clock, estimate=lambda: 200.0)
    p.under_budget(600.0, lambda: clock.now + 60)  # a resumed run: 60 s spent before
    for now in (30.0, 90.0, 150.0, 210.0):  # more steps than any total given: none is shown
        clock.now = now
        p.advance("cnn: 3 configurations (g0), round 1", "30 s")
    assert out.getvalue().splitlines()[-1] == (
        "[4] cnn: 3 configurations (g0), round 1 30 s  elapsed 4:30 of 10:00 budget  ETA 3:20"
    )


def test_under_a_budget_the_terminal_bar_fills_with_the_budget_spent(xterm) -> None:
    out, clock = io.StringIO(), Clock()
    p = Progress(1, stream=out, force_terminal=True, clock=clock, estimate=lambda: 300.0)
    p.under_budget(600.0, clock)
    for now in (100.0, 300.0):
        clock.now = now
        p.show("g0, round 1")
        p.advance("g0, round 1", "ok")
    p.close()
    last = ANSI.sub("", out.getvalue()).replace("\r", "\n").strip().splitlines()[-1]
    assert "2/" not in last and " 2 " in last and "elapsed 5:00 of 10:00 budget" in last
