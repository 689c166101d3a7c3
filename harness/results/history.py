"""The results history: reading it with clear errors, listing its runs, and resolving run references
(REF: a run id or unique prefix, ``latest``, ``previous``, ``last:N``, a UTC date ``YYYY-MM-DD`` or
a range ``YYYY-MM-DD..YYYY-MM-DD``, both ends included; docs/explanation/statistics.md). Runs are
ordered by their first row's timestamp. The history may be read from several roots at once
(:data:`Roots`: ``--results`` given more than once, each a folder or a pack file,
:mod:`harness.results.pack`); a run that two of them hold is refused before any row is read
(:func:`open_roots`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.contract.records import Status
from harness.errors import EXIT_SHORT_HISTORY, EXIT_USAGE, HarnessError
from harness.results.pack import Manifest, NotAPack, not_a_pack, open_pack, stored_runs
from harness.results.store import AB_FOLDER, READ_ERRORS, read


def _runs_text(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


REF_HELP = (
    "a run id (or unique prefix), latest, previous, last:N, a date YYYY-MM-DD or a range "
    "YYYY-MM-DD..YYYY-MM-DD"
)

_DATE = r"\d{4}-\d{2}-\d{2}"


Roots = str | Path | Sequence[str | Path]
"""Where results are read from: one root or several, each a results folder or a pack file that
``python -m harness pack`` wrote (:mod:`harness.results.pack`)."""


@dataclass(frozen=True)
class Root:
    """One results root as given, and the folder it is read from."""

    given: str
    """The path as the user gave it (what messages name)."""
    folder: Path
    """The results folder itself, or the temporary folder its pack was extracted to."""
    pack: Manifest | None
    """The pack's manifest; None for a folder."""
    runs: frozenset[str]
    """The run ids it holds files of (:func:`harness.results.pack.stored_runs`)."""


def _open(given: str, flag: str) -> Root:
    """A root: a folder (read as it is; a missing one reads as empty), or a file, which must be a
    pack (HarnessError, exit 2, naming it and why otherwise)."""
    path = Path(given)
    if not path.is_file():
        return Root(given, path, None, stored_runs(path) if path.is_dir() else frozenset())
    try:
        opened = open_pack(path)
    except NotAPack as e:
        raise not_a_pack(given, str(e), flag) from None
    except OSError as e:
        raise not_a_pack(given, e.strerror or str(e), flag) from None
    return Root(given, opened.folder, opened.manifest, stored_runs(opened.folder))


def _refuse_repeats(roots: Sequence[Root], flag: str) -> None:
    """HarnessError (exit 2) when a run is in two roots (the same folder twice, a folder and its
    pack, two packs of one run): it would count twice."""
    for i, first in enumerate(roots):
        for second in roots[i + 1 :]:
            both = sorted(first.runs & second.runs)
            if both:
                more = f" (and {len(both) - 1} more)" if len(both) > 1 else ""
                raise HarnessError(
                    f"Received {flag} {first.given!r} and {flag} {second.given!r}: both hold run "
                    f"{both[0]}{more}; expected each run in one of them (read twice, its rows "
                    "would count twice)."
                )


def open_roots(roots: Roots, flag: str = "--results") -> tuple[Root, ...]:
    """``roots`` opened (packs checked and extracted once per process), in order; HarnessError
    (exit 2) for a file that is not a pack, and for a run held by two of them, before any rows are
    read. ``flag``: the option the roots came from, for the messages."""
    given = [roots] if isinstance(roots, str | Path) else list(roots)
    if not given:
        raise HarnessError(f"Received no {flag}; expected a results folder or a pack file.")
    opened = tuple(_open(str(r), flag) for r in given)
    _refuse_repeats(opened, flag)
    return opened


def _concat(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Frames of one schema, one after the other (the empty ones dropped where others hold rows:
    pandas warns on concatenating empty frames)."""
    kept = [f for f in frames if not f.empty] or list(frames[:1])
    return pd.concat(kept, ignore_index=True) if len(kept) > 1 else kept[0].reset_index(drop=True)


def _load_one(root: Path, ab: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells, windows) of one results folder, ``ab`` rows kept or left out as :func:`load` says."""
    cells, windows = read(root, "cells"), read(root, "windows")
    paired = cells["ab_id"].notna()
    if ab:
        cells = _concat([cells, read(root / AB_FOLDER, "cells")])
        windows = _concat([windows, read(root / AB_FOLDER, "windows")])
    else:
        windows = windows[~windows["run_id"].isin(set(cells.loc[paired, "run_id"]))]
        cells = cells[~paired]
    return cells, windows


def _no_results(roots: Sequence[Root]) -> HarnessError:
    """The error for ``roots`` holding no row, naming where they hold cells (a pack: itself)."""
    where = ", ".join(r.given if r.pack else str(Path(r.given) / "cells") for r in roots)
    return HarnessError(f"no results under {where}: run `python -m harness run` first, or pass --results DIR")


def _folders(roots: Roots, flag: str) -> tuple[Root, ...]:
    """``roots`` opened as :func:`open_roots` does; HarnessError when one does not exist."""
    opened = open_roots(roots, flag)
    missing = [r for r in opened if not r.folder.exists()]
    if missing:
        raise _no_results(missing[:1])
    return opened


def load(roots: Roots, ab: bool = False, flag: str = "--results") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells, windows) of every run under ``roots`` (one results folder or pack, or several: their
    rows one after the other, in the order given); HarnessError when a root does not exist, when
    there is no row at all, and as :func:`open_roots` says (a file that is not a pack, a run held
    twice). ``ab`` rows (stored under ``results/ab``, or, in folders older than that, among the
    runs' rows) are not runs of the history and are left out, unless ``ab`` (``report --run
    AB_ID``). A file that cannot be read is named on stderr and left out
    (:func:`harness.results.store.damage_text`)."""
    opened = _folders(roots, flag)
    parts = [_load_one(r.folder, ab) for r in opened]
    cells, windows = _concat([c for c, _ in parts]), _concat([w for _, w in parts])
    if cells.empty:
        raise _no_results(opened)
    return cells, windows


def load_runs(roots: Roots, flag: str = "--results") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells, collectives) under ``roots``: the tables whose rows make runs (a ``--sweep collectives``
    run's are collectives alone), read as :func:`load` does; HarnessError when neither has a row."""
    opened = _folders(roots, flag)
    cells = _concat([_load_one(r.folder, False)[0] for r in opened])
    collectives = _concat([read(r.folder, "collectives") for r in opened])
    if cells.empty and collectives.empty:
        raise _no_results(opened)
    return cells, collectives


def load_table(roots: Roots, table: str) -> pd.DataFrame:
    """Every row of ``table`` (``ratios``, ``collectives``: a name in
    :data:`harness.results.store.TABLES`) under ``roots`` (as :func:`load` takes them), one after
    the other."""
    return _concat([read(r.folder, table) for r in open_roots(roots)])


def _costs_or_none(folder: Path) -> pd.DataFrame:
    try:
        return read(folder, "costs")
    except READ_ERRORS:
        return read(folder / "missing", "costs")


def costs(roots: Roots) -> pd.DataFrame:
    """Every run's costs row under ``roots`` (empty when there are none or they cannot be read:
    the suite's own cost is reported, never a reason to fail)."""
    return _concat([_costs_or_none(r.folder) for r in open_roots(roots)])


def runs(*tables: pd.DataFrame) -> pd.DataFrame:
    """One row per run of ``tables`` (cells, and collectives where a caller reads them): run_id
    and start (its first row's timestamp); oldest first."""
    rows = _concat([t[["run_id", "timestamp"]] for t in tables])
    first = rows.groupby("run_id", sort=False)["timestamp"].min().rename("start").reset_index()
    return first.sort_values(["start", "run_id"]).reset_index(drop=True)


def resolve(
    ref: str, all_runs: pd.DataFrame, before: Sequence[str] = (), short_exit: int = EXIT_USAGE, flag: str = ""
) -> list[str]:
    """The run ids ``ref`` names, oldest first; with ``before`` (the candidate's runs), ``last:N``,
    ``latest`` and ``previous`` look only at runs that started before the first of them. HarnessError
    when ``ref`` names no run: exit ``short_exit`` when ``latest``, ``previous`` or ``last:N`` find too
    short a history (``compare`` passes 3), exit 2 when a run id, prefix or date matches nothing or is
    empty. ``flag`` (``--run``): the option it came from, for the message."""
    given = f"{flag}={ref!r}" if flag else repr(ref)
    if not ref.strip():
        raise HarnessError(f"Received {given}; expected {REF_HELP}.")
    ids = list(all_runs["run_id"])
    starts = dict(zip(all_runs["run_id"], all_runs["start"], strict=True))
    pool = ids
    if before:
        first = min(starts[r] for r in before)
        pool = [r for r in ids if starts[r] < first and r not in before]
    ref = ref.strip()
    found: list[str]
    counted = ref in ("latest", "previous") or re.fullmatch(r"last:\d+", ref) is not None
    if ref == "latest":
        found = pool[-1:]
    elif ref == "previous":
        found = pool[-2:-1]
    elif m := re.fullmatch(r"last:(\d+)", ref):
        n = int(m.group(1))
        if n < 1:
            raise HarnessError(f"Received {given}; expected last:N with N >= 1.")
        found = pool[-n:]
    elif m := re.fullmatch(rf"({_DATE})(?:\.\.({_DATE}))?", ref):
        lo, hi = m.group(1), m.group(2) or m.group(1)
        found = [r for r in ids if lo <= str(starts[r])[:10] <= hi and r not in before]
    else:
        found = [r for r in ids if r == ref] or [r for r in ids if r.startswith(ref)]
        if len(found) > 1:
            raise HarnessError(
                f"Received {given}: it matches {len(found)} runs "
                f"({', '.join(found[:3])}{', ...' if len(found) > 3 else ''}); "
                "expected more of one run id."
            )
    if not found and counted:
        needed = 2 if ref == "previous" else 1
        if before:
            raise HarnessError(
                f"Received {given} as the baseline: the history holds {_runs_text(len(ids))}, "
                f"{len(pool) or 'none'} of them before the candidate "
                f"({', '.join(list(before)[:3])}{', ...' if len(before) > 3 else ''}); {ref!r} "
                f"needs at least {needed} earlier run(s).",
                short_exit,
            )
        raise HarnessError(
            f"Received {given}: the history holds {_runs_text(len(ids))}; {ref!r} needs at least {needed}.",
            short_exit,
        )
    if not found:
        known = ", ".join(ids[-3:]) or "none"
        raise HarnessError(f"Received {given}: no run matches; expected {REF_HELP}. Newest runs: {known}.")
    return found


@dataclass(frozen=True)
class JudgedRuns:
    """The runs a comparison judges: candidate and baseline run ids (oldest first) and the number
    of runs in the whole history."""

    candidate: list[str]
    baseline: list[str]
    history_runs: int


def select_comparison(cells: pd.DataFrame, baseline_ref: str, candidate_ref: str) -> JudgedRuns:
    """Resolve ``compare``'s references: the candidate runs, then the baseline runs before them
    (none yet: an empty baseline, which the gate reports as too short a history, exit 3)."""
    all_runs = runs(cells)
    candidate = resolve(candidate_ref, all_runs, short_exit=EXIT_SHORT_HISTORY, flag="--candidate")
    try:
        baseline = resolve(
            baseline_ref, all_runs, before=candidate, short_exit=EXIT_SHORT_HISTORY, flag="--baseline"
        )
    except HarnessError as e:
        if e.exit_code != EXIT_SHORT_HISTORY:
            raise
        baseline = []
    return JudgedRuns(candidate, baseline, len(all_runs))


def earlier_figures(cells: pd.DataFrame, cell_id: str, fingerprint: str | None) -> list[float]:
    """The figures of ``cell_id``'s measured rows on ``fingerprint`` in ``cells`` (earlier runs),
    oldest first: one per run (its last row when a run holds several)."""
    if cells.empty or not fingerprint:
        return []
    sel = cells[
        (cells["cell_id"] == cell_id)
        & (cells["fingerprint"] == fingerprint)
        & (cells["status"] == Status.OK)
        & cells["examples_per_sec"].notna()
    ]
    sel = sel.sort_values("timestamp").groupby("run_id", sort=False).tail(1)
    return [float(x) for x in sel.sort_values("timestamp")["examples_per_sec"]]
