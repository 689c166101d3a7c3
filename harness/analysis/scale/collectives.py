"""The collectives table as text (the bandwidth formulas: :mod:`harness.formulas.bandwidth`). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from harness.contract.records import CollectiveRow, Status


def _size(nbytes: float | None) -> str:
    if nbytes is None:
        return "-"
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


def _time(r: CollectiveRow) -> str:
    """``123.4 [110.0..140.2]`` microseconds, without the CI below 2 processes."""
    t = r.get("time_s")
    if not t:
        return "-"
    text = f"{t * 1e6:,.1f}"
    lo, hi = r.get("time_s_ci_low"), r.get("time_s_ci_high")
    return text + (f" [{lo * 1e6:,.1f}..{hi * 1e6:,.1f}]" if lo is not None and hi is not None else "")


def table_lines(rows: Sequence[CollectiveRow]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(header, lines) of the collectives rows, for :func:`harness.analysis.run.tables.render_table`."""
    header = ("strategy[op]", "n", "payload", "bytes", "time us [95% CI]", "busbw GB/s", "check")
    lines: list[tuple[str, ...]] = [
        (
            f"{r['strategy']}[{r['op']}]",
            f"{r['replicas']}x{r['workers']}",
            r.get("payload") or "-",
            _size(r.get("bytes")),
            _time(r),
            f"{r['busbw_gbps']:.3g}" if r.get("busbw_gbps") else "-",
            "ok" if r.get("status") == Status.OK else f"{r.get('status')}: {(r.get('reason') or '')[:70]}",
        )
        for r in rows
    ]
    return header, lines
