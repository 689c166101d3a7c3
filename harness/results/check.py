"""``python -m harness check``: every file of a results folder read, and what is wrong said with
what to do: a parquet file that cannot be read (truncated, corrupt, not parquet, a schema it
cannot be read with), a journal with a corrupt line, a run stopped before it wrote its rows, the
temporary file of a write a kill interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
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
        for table, schema in TABLES.items():
            for path in table_files(base / table):
                files += 1
                try:
                    read_file(path, schema)
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
        ended = any(e["kind"] == "end" for e in entries)
        written = any((root / "cells").glob(f"*/{run_id}/*.parquet"))
        if not written or not ended:
            what = (
                "stopped before it wrote its rows"
                if not written
                else "interrupted before its budget was spent"
            )
            findings.append(
                Finding(
                    path,
                    f"run {run_id} was {what}: python -m harness run --resume {run_id} --out {root} "
                    "keeps what it measured and measures the rest",
                    False,
                )
            )
    return findings, len(ids)


def scan(root: Path) -> Scan:
    """Every table file (runs' and ``ab``'s) and every journal under ``root``, read."""
    if not root.is_dir():
        raise HarnessError(
            f"Received --results={str(root)!r}; expected a results folder (it does not exist)."
        )
    tables, files = _tables(root)
    journals, count = _journals(root)
    return Scan(tables + journals, files + count)
