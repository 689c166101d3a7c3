"""The table printed at the end of a run: model x strategy x replicas, examples/s with CI,
efficiency; and :func:`render_table`, the table renderer every command shares (rich on a terminal,
plain text otherwise)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

from rich import box
from rich.console import Console, JustifyMethod
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harness.analysis.run import answer
from harness.contract.records import CellRow, Status
from harness.formulas.breakdown import measured


def num(x: object, fmt: str) -> str:
    """``x`` formatted as ``fmt``; ``-`` for None or NaN."""
    return "-" if x is None or x != x else format(x, fmt)


def fixed_width(lines: Sequence[Sequence[str]], rule: bool = True) -> str:
    """The plain form of :func:`render_table`: rows as left-aligned columns two spaces apart (the
    last column unpadded), with a rule under the first (header) row when ``rule``."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    out = [
        "  ".join(c.ljust(w) for c, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1]
        for line in lines
    ]
    if rule:
        out.insert(1, "-" * len(out[0]))
    return "\n".join(out)


_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?[%x*]?")
"""A number as the tables print it (``12,346``, ``+1.2%``, ``18,000*``): right-aligned on a terminal."""


def is_terminal(stream: TextIO | None = None, force_terminal: bool | None = None) -> bool:
    """Whether text for ``stream`` (default stdout) should be rendered for a terminal: its
    ``isatty()``, unless ``force_terminal`` says otherwise. FORCE_COLOR does not count: the plain
    form is what scripts parse."""
    if force_terminal is not None:
        return force_terminal
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def render_table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    title: str | None = None,
    stream: TextIO | None = None,
    *,
    rule: bool = True,
    indent: int = 0,
    force_terminal: bool | None = None,
) -> str:
    """The one table renderer of every command: the text to write to ``stream`` (default stdout).
    On a terminal (:func:`is_terminal`) a rich table fitted to its width: free text and long headers
    wrap at spaces, other values never break (rows too wide stay whole, folded by the terminal),
    numbers right-aligned, colours as rich decides (none under NO_COLOR). Otherwise plain
    :func:`fixed_width` text of the same columns, ``title`` above, a rule under the header only with
    ``rule``. Every line is indented by ``indent`` spaces."""
    cells = [tuple(str(c) for c in r) for r in rows]
    if not is_terminal(stream, force_terminal):
        lines = ([title] if title else []) + fixed_width([tuple(header), *cells], rule).splitlines()
        return "\n".join(" " * indent + line for line in lines)
    console = Console(file=stream or sys.stdout, force_terminal=True)

    def padded(wrap_headers: bool) -> tuple[Padding, Measurement]:
        table = Padding(_rich_table(header, cells, title, wrap_headers), (0, 0, 0, indent), expand=False)
        return table, Measurement.get(console, console.options.update_width(10_000), table)

    table, width = padded(False)
    if width.minimum > console.width:  # too wide: wrap the headers too
        table, width = padded(True)
    if width.minimum > console.width:  # too wide even wrapped: whole rows, which the terminal folds
        console = Console(file=stream or sys.stdout, force_terminal=True, width=width.maximum)
    with console.capture() as captured:
        console.print(table)
    return captured.get().rstrip("\n")


def _rich_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], title: str | None, wrap_headers: bool
) -> Table:
    """:func:`render_table`'s rich table: a column whose values hold a space is free text, which
    may wrap at spaces; any other column is exactly as wide as its longest value or its header
    (or, when ``wrap_headers``, the header's longest piece, see :func:`_pieces`)."""
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        header_style="bold",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
    for i, name in enumerate(header):
        values = [r[i] for r in rows]
        numbers = [v for v in values if v != "-"]
        justify: JustifyMethod = "right" if numbers and all(_NUMBER.fullmatch(v) for v in numbers) else "left"
        pieces = _pieces(name) if wrap_headers else [name]
        head = max([1, *(len(p.strip()) for p in pieces)])
        if any(" " in v for v in values):
            width = max([head, *(len(w) for v in values for w in v.split())])
            table.add_column(_broken(pieces, width), justify=justify, overflow="fold", min_width=width)
        else:
            width = max([head, *map(len, values)])
            table.add_column(_broken(pieces, width), justify=justify, overflow="fold", width=width)
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    return table


def _pieces(header: str) -> list[str]:
    """``header`` cut after each space, ``_``, ``/`` and ``-``, a piece of one or two characters
    kept with the one before (``examples/s`` stays whole)."""
    pieces: list[str] = []
    for piece in re.findall(r"[^ _/-]*[ _/-]?", header):
        if pieces and len(piece.strip(" _/-")) <= 2:
            pieces[-1] += piece
        elif piece:
            pieces.append(piece)
    return pieces


def _broken(pieces: Sequence[str], width: int) -> Text:
    """A header from its pieces, as few lines of at most ``width`` as they pack into."""
    lines = [""]
    for piece in pieces:
        if lines[-1] and len((lines[-1] + piece).rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return Text("\n".join(line.rstrip() for line in lines))


def summary_table(
    rows: Sequence[CellRow], stream: TextIO | None = None, force_terminal: bool | None = None
) -> str:
    """The rows as a table (see :func:`render_table`), in the order given, each configuration in
    words (:func:`harness.analysis.run.answer.labels`)."""
    named = answer.row_labels(rows)
    header: tuple[str, ...] = ("model", "configuration", "examples/s", "95% CI", "processes", "spread")
    header += ("efficiency", "bound", "status")
    lines = []
    for r, label in zip(rows, named, strict=True):
        eps = r.examples_per_sec
        ci = f"{num(eps.low, ',.0f')}..{num(eps.high, ',.0f')}" if eps.value is not None else "-"
        status = str(r.status) if r.status == Status.OK else f"{r.status}: {(r.reason or '')[:60]}"
        figure = num(eps.value, ",.0f") + ("*" if r.ran.oversubscribed else "")
        said = (num(r.spread.processes, "d"), _cvs(r), _efficiency(r), _bound(r), status)
        lines.append((r.cell.model, label, figure, ci, *said))
    return render_table(header, lines, stream=stream, force_terminal=force_terminal)


def _cvs(r: CellRow) -> str:
    """The processes' coefficient of variation (``unstable`` above the run's threshold)."""
    s = r.spread
    if s.cv_between_processes is None:
        return "-"
    return num(s.cv_between_processes, ".1%") + (" unstable" if s.unstable else "")


def _bound(r: CellRow) -> str:
    """The part of the update with the largest share of the step, and that share (``compute 71%``);
    ``no verdict (compute 173%)`` where a part took longer than the step (no bound); ``-`` without
    parts."""
    m = measured(r.breakdown)
    if m is None:
        return "-"
    share, bound = m.shares(), r.breakdown.bound
    if bound in share:
        return f"{bound} {share[bound]:.0%}"
    bad = m.excess()
    return f"no verdict ({', '.join(f'{n} {s:.0%}' for n, s in bad.items())})" if bad else "-"


def _efficiency(r: CellRow) -> str:
    """Scaling efficiency, ``~`` marking one whose CI contains 1 (indistinguishable from perfect)."""
    e = r.efficiency.scaling_efficiency
    near_one = (
        e.low is not None
        and e.high is not None
        and e.low <= 1 <= e.high
        and r.cell.replicas * r.cell.workers > 1
    )
    return num(e.value, ".2f") + ("~" if near_one else "")


FOOTNOTE = (
    "examples/s: each configuration's figure, the median over its processes (up to "
    "{max_processes}, at least {processes} passes, each in a new order) of each process's median "
    "of {repeats} timed windows of ~{window_s:g} s (warm-up excluded), with its 95% CI over those "
    "processes (Student t, log scale), widened to the spread of earlier runs where the folder holds "
    "2 or more. spread: how much its processes disagree (coefficient of variation; unstable "
    "above {unstable_cv:g} at the cap). efficiency: throughput / (devices x the 1-device "
    "throughput) ('~': its CI contains 1). bound: the part of an update that explains most of its "
    "time (results/README.md), 'no verdict' where a part took longer than the update it was timed "
    "with. Co-tenant processes: examples/s is their sum."
)
TURNS_FOOTNOTE = (
    "examples/s: each configuration's own figure, the median over its processes (fresh ones, at "
    "least {processes}) of each process's median timed window (~{turn_s:g} s with the whole machine "
    "while the others it was compared with waited; warm-up excluded), with its 95% CI over those "
    "processes: a figure, not a ranking (rankings are the comparisons in turns below). spread: how "
    "much its processes disagree (coefficient of variation; unstable above {unstable_cv:g}). "
    "efficiency: throughput / (devices x the 1-device throughput), measured in turns ('~': its CI "
    "contains 1). bound: the part of an update with the largest share of its time. Co-tenant "
    "processes: examples/s is their sum."
)
OVERSUBSCRIBED_NOTE = "* measured with oversubscribed cores (cores_per_worker x (workers + ps) > host cores)."
LOGICAL_NOTE = (
    "Replicas here are logical CPU devices (or local workers) sharing one CPU: extra "
    "replicas add no compute, so efficiency near 1/N is expected and says nothing about "
    "real devices."
)
LOGICAL_GPU_NOTE = (
    "Replicas marked logical here are logical GPUs carved from one GPU: they share its compute, so "
    "they exercise the strategy's all-reduce and cross-device ops, not the speed of more GPUs "
    "(efficiency near 1/N is expected)."
)


def logical_note(rows: Sequence[CellRow]) -> str | None:
    """The note for a run whose rows include replicas on logical devices (GPUs or CPUs), else None."""
    kind = answer.logical_kind(rows)
    return None if kind is None else LOGICAL_GPU_NOTE if kind == "GPU" else LOGICAL_NOTE
