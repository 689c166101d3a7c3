"""``python -m harness check``: every file of a results folder read, and what is wrong said with
what to do: a parquet file that cannot be read (truncated, corrupt, not parquet, a schema it
cannot be read with), a journal with a corrupt line, a run stopped before it wrote its rows, the
temporary file of a write a kill interrupted."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.formulas.turns import Turn, busiest_other, summarize
from harness.results import journal
from harness.results.store import (
    AB_FOLDER,
    NIGHTLY_FOLDER,
    READ_ERRORS,
    TABLES,
    damage_text,
    error_text,
    read_file,
    table_files,
)


@dataclass(frozen=True)
class Finding:
    """One thing found: ``damaged`` (rows a reader leaves out), or a note (``damaged`` False:
    nothing is lost, something may be done)."""

    path: Path
    text: str
    damaged: bool


@dataclass(frozen=True)
class Scan:
    """What reading every file of a results folder found, and how many files it read."""

    findings: list[Finding]
    files: int

    @property
    def damaged(self) -> list[Finding]:
        return [f for f in self.findings if f.damaged]


def _tables(root: Path) -> tuple[list[Finding], int]:
    findings, files = [], 0
    for base in (root, root / AB_FOLDER, root / NIGHTLY_FOLDER):
        for table, layout in TABLES.items():
            for path in table_files(base / table):
                files += 1
                try:
                    read_file(path, layout.schema)
                except READ_ERRORS as e:
                    findings.append(Finding(path, damage_text(path, error_text(e)), True))
            leftovers = sorted((base / table).rglob(".*.tmp")) if (base / table).is_dir() else []
            findings += [
                Finding(p, f"{p}: the temporary file of a write that was interrupted; delete it", False)
                for p in leftovers
            ]
    return findings, files


def _journals(root: Path) -> tuple[list[Finding], int]:
    findings = []
    ids = journal.run_ids(root)
    for run_id in ids:
        path = journal.path_of(root, run_id)
        try:
            entries = journal.read(path)
        except HarnessError as e:
            findings.append(Finding(path, f"{e}; the run's stored rows are unaffected", True))
            continue
        findings += _turns(path, run_id, entries)
        ended = any(e["kind"] == "end" for e in entries)
        written = any((root / "cells").glob(f"*/{run_id}/*.parquet"))
        if not written or not ended:
            what = (
                "interrupted before its budget was spent" if written else "stopped before it wrote its rows"
            )
            findings.append(
                Finding(
                    path,
                    f"run {run_id} was {what}: python -m harness run --resume {run_id} --results {root} "
                    "keeps what it measured and measures the rest",
                    False,
                )
            )
    return findings, len(ids)


def _turns(path: Path, run_id: str, entries: list[dict[str, Any]]) -> list[Finding]:
    """A note of how the run's turns fared under the disturbance rule (none without turns)."""
    known = {f.name for f in dataclasses.fields(Turn)}
    instances = [
        [Turn(**{k: v for k, v in t.items() if k in known}) for t in e["instance"]["turns"]]
        for e in entries
        if e["kind"] == "instance" and e.get("instance", {}).get("turns")
    ]
    if not instances:
        return []
    s = summarize(instances)
    name, cpus = busiest_other([t for turns in instances for t in turns])
    busiest = f"; busiest other program in disturbed turns: {name}, {cpus:.2f} CPUs" if name else ""
    split = any(not math.isnan(t.foreign_cpu_s) for turns in instances for t in turns)
    use = (
        f"median CPUs per turn of other programs {s.median_foreign:.2f}, of everything besides the "
        f"member {s.median_besides:.2f} (the run's other processes {s.median_run:.2f})"
        if split
        else f"median CPUs per turn besides the member {s.median_besides:.2f} (a journal from before "
        "other programs were told apart from the run and the kernel)"
    )
    text = f"run {run_id}: {s.kept} of {s.blocks} blocks kept in turns; {use}{busiest}"
    return [Finding(path, text, False)]


def require_folder(root: Path, given: str | None = None) -> None:
    """HarnessError (exit 2) naming ``given`` (default: ``root``) when ``root`` is not a folder."""
    if not root.is_dir():
        raise HarnessError(
            f"Received --results={given or str(root)!r}; expected a results folder (it does not exist)."
        )


def scan(root: Path) -> Scan:
    """Every table file (runs' and ``ab``'s) and every journal under ``root``, read."""
    require_folder(root)
    tables, files = _tables(root)
    journals, count = _journals(root)
    return Scan(tables + journals, files + count)
