"""The results history: reading it with clear errors, listing its runs, and resolving run references.

A **run reference** (REF) names runs of the history:

- a run id (``20261121T133824Z-e6d583``) or a unique prefix of one;
- ``latest`` (the newest run), ``previous`` (the one before it);
- ``last:N``: the N newest runs (when used as a baseline: the N newest before the candidate);
- a date ``YYYY-MM-DD`` (every run that started that UTC day) or a range ``YYYY-MM-DD..YYYY-MM-DD``
  (both ends included).

Runs are ordered by their first row's timestamp.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.contract.records import Status
from harness.errors import EXIT_SHORT_HISTORY, EXIT_USAGE, HarnessError
from harness.results.store import AB_FOLDER, READ_ERRORS, read_cells, read_costs, read_windows


def _runs_text(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


REF_HELP = (
    "a run id (or unique prefix), latest, previous, last:N, a date YYYY-MM-DD or a range "
    "YYYY-MM-DD..YYYY-MM-DD"
)

_DATE = r"\d{4}-\d{2}-\d{2}"


def load(results: str | Path, ab: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells, windows) of every run under ``results``; HarnessError when there is none. ``ab``
    rows (stored under ``results/ab``, or, in folders older than that, among the runs' rows) are
    not runs of the history and are left out, unless ``ab`` (``report --run AB_ID``). A file that
    cannot be read is named on stderr and left out (:func:`harness.results.store.damage_text`)."""
    root = Path(results)
    cells, windows = read_cells(root), read_windows(root)
    paired = cells["ab_id"].notna()
    if ab:
        cells = pd.concat([cells, read_cells(root / AB_FOLDER)], ignore_index=True)
        windows = pd.concat([windows, read_windows(root / AB_FOLDER)], ignore_index=True)
    else:
        windows = windows[~windows["run_id"].isin(set(cells.loc[paired, "run_id"]))]
        cells = cells[~paired]
    if cells.empty:
        raise HarnessError(
            f"no results under {root / 'cells'}: run `python -m harness run` first, or pass --results DIR"
        )
    return cells.reset_index(drop=True), windows.reset_index(drop=True)


def costs(results: str | Path) -> pd.DataFrame:
    """Every run's costs row under ``results`` (empty when there are none or they cannot be read:
    the suite's own cost is reported, never a reason to fail)."""
    try:
        return read_costs(Path(results))
    except READ_ERRORS:
        return read_costs(Path(results) / "missing")


def runs(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per run: run_id, start (first timestamp), rows, fingerprints; oldest first."""
    if cells.empty:
        return pd.DataFrame(columns=["run_id", "start", "rows", "fingerprints"])
    grouped = cells.groupby("run_id", sort=False).agg(
        start=("timestamp", "min"),
        rows=("cell_id", "size"),
        fingerprints=("fingerprint", lambda s: tuple(sorted(set(s.dropna())))),
    )
    return grouped.reset_index().sort_values(["start", "run_id"]).reset_index(drop=True)


def resolve(
    ref: str, all_runs: pd.DataFrame, before: Sequence[str] = (), short_exit: int = EXIT_USAGE, flag: str = ""
) -> list[str]:
    """The run ids ``ref`` names, oldest first. With ``before`` (the candidate's runs), ``last:N``,
    ``latest`` and ``previous`` only look at runs that started before the first of them, and those
    runs are never included.

    Raises HarnessError when ``ref`` names no run: with exit code ``short_exit`` when ``latest``,
    ``previous`` or ``last:N`` finds none because the history is too short (``compare`` passes 3,
    not enough history), with exit code 2 when a run id, prefix or date matches nothing, or is
    empty. ``flag`` (``--run``): the option the reference came from, for the message."""
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
class Selection:
    """The runs a comparison judges: candidate and baseline run ids (oldest first) and the number
    of runs in the whole history."""

    candidate: list[str]
    baseline: list[str]
    history_runs: int


def select_comparison(cells: pd.DataFrame, baseline_ref: str, candidate_ref: str) -> Selection:
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
    return Selection(candidate, baseline, len(all_runs))


def latest_runs_per_machine(cells: pd.DataFrame) -> list[str]:
    """The newest run of each machine fingerprint."""
    newest: dict[str, str] = {}
    for run_id, fingerprints in zip(runs(cells)["run_id"], runs(cells)["fingerprints"], strict=True):
        for fp in fingerprints:
            newest[str(fp)] = str(run_id)
    return sorted(set(newest.values()))


def ok_rows(cells: pd.DataFrame, run_ids: Sequence[str]) -> pd.DataFrame:
    """Measured rows (status ok, with a throughput) of the given runs."""
    sel = cells[cells["run_id"].isin(list(run_ids))]
    return sel[(sel["status"] == Status.OK) & sel["examples_per_sec"].notna()]


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


def describe(all_runs: pd.DataFrame, run_ids: Sequence[str]) -> dict[str, Any]:
    """A short description of a set of runs, for printing."""
    sel = all_runs[all_runs["run_id"].isin(list(run_ids))]
    return {"runs": len(sel), "first": str(sel["start"].min()), "last": str(sel["start"].max())}
