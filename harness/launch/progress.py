"""A one-line progress display with the current cell id and an ETA, on stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_eta(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a non-negative number of seconds."""
    s = int(round(max(seconds, 0.0)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """``[####......] 3/10 eta 1:02  cnn/mirrored[auto]/r2w1/...``; redrawn in place on a terminal,
    one line per cell otherwise (CI logs)."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 20) -> None:
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.t0 = time.monotonic()

    def line(self, current: str) -> str:
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        if self.done:
            eta = format_eta((time.monotonic() - self.t0) / self.done * (self.total - self.done))
        else:
            eta = "?"
        return f"[{bar}] {self.done}/{self.total} eta {eta}  {current}"

    def show(self, current: str) -> None:
        text = self.line(current)
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def advance(self, current: str = "") -> None:
        self.done += 1
        if self.tty:
            self.show(current)

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
