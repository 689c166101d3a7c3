"""Figures built but not rendered, for tests that check what a page or command says rather than
what its pictures look like (rendering a PNG and an SVG is most of such a test's time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.run import plots


def save_unrendered(fig: Any, out: Path, name: str) -> list[Path]:
    """:func:`harness.analysis.run.plots.save` without the rendering: the folder made and each
    file written as the real one would, holding a few placeholder bytes (a page embeds them as it
    would a picture), the figure closed."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{ext}" for ext in plots.FORMATS]
    for path in paths:
        path.write_bytes(b"not rendered")
    plots.pyplot().close(fig)
    return paths
