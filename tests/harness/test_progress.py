"""Tests of harness.progress."""

from __future__ import annotations

import io

import pytest

from harness.launch.progress import Progress, format_eta


@pytest.mark.parametrize("seconds,text", [
    (0, "0:00"), (5, "0:05"), (59.6, "1:00"), (65, "1:05"), (600, "10:00"), (3599, "59:59"),
    (3600, "1:00:00"), (3725, "1:02:05"), (36000, "10:00:00"), (-12, "0:00"),
])
def test_format_eta(seconds, text):
    assert format_eta(seconds) == text


def test_progress_not_a_tty_prints_one_line_per_show():
    out = io.StringIO()
    p = Progress(3, stream=out, width=10)
    assert not p.tty
    p.show("cnn/default/r1w1/b64")
    p.advance("cnn/default/r1w1/b64")
    p.show("cnn/mirrored[auto]/r2w1/b64")
    p.advance("cnn/mirrored[auto]/r2w1/b64")
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "0/3" in lines[0] and "cnn/default/r1w1/b64" in lines[0] and "eta ?" in lines[0]
    assert lines[0].startswith("[" + "." * 10 + "]")
    assert "1/3" in lines[1] and "cnn/mirrored[auto]/r2w1/b64" in lines[1]
    assert lines[1].startswith("[###.......]")  # 10 * 1 // 3 = 3 filled
    assert "eta " in lines[1] and "eta ?" not in lines[1]
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_tty_redraws_in_place():
    out = FakeTty()
    p = Progress(2, stream=out, width=4)
    p.show("a")
    p.advance("a")
    p.close()
    text = out.getvalue()
    assert text.count("\r\033[K") == 2
    assert "0/2" in text and "1/2" in text and text.endswith("\n")


def test_progress_zero_total():
    out = io.StringIO()
    Progress(0, stream=out).show("nothing")
    assert "0/0" in out.getvalue()
