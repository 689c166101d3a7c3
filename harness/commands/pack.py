"""``python -m harness pack``: some runs of a results folder in one ``.tar.gz`` that travels (their
tables' files and journals, and a manifest: :mod:`harness.results.pack`), which every command that
reads results takes as ``--results FILE``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness import __version__
from harness.analysis.comparisons.compare import machine_names
from harness.commands.output import CommandResult
from harness.commands.paths import RESULTS, check_writable_file
from harness.errors import HarnessError
from harness.results import history
from harness.results.history import REF_HELP
from harness.results.pack import FORMAT, SUFFIX, VERSION, Manifest, write_pack

NAME = "pack"

EXITS: dict[int, str] = {
    0: "the pack written",
    2: "bad input (a bad reference, an --out that exists without --force, unreadable results)",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help=summary,
        description="The runs are those of the cells and collectives tables (a --sweep collectives run has "
        "collectives rows alone). The pack holds each run's cells, windows, ratios, costs and "
        "collectives files and its journal, at the paths they have in the folder, and pack.json (the "
        f"format and its version, the run ids, when packed, the suite's version). REF: {REF_HELP}.",
    )
    p.add_argument(
        "--results",
        default=RESULTS,
        metavar="DIR",
        help=f"the results folder whose runs are packed. Default: {RESULTS}",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        default=None,
        metavar="REF",
        help="the runs to pack (of the cells or collectives table). Default: every run in the folder",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help=f"the pack to write, a name ending {SUFFIX}. Default: FIRST_RUN_ID{SUFFIX} in the current folder",
    )
    p.add_argument(
        "--machine",
        default=None,
        metavar="NAME",
        help="pack only the runs of this machine (its name as compare-hardware prints it); needed "
        "when the runs were measured on several",
    )
    p.add_argument("--force", action="store_true", help="overwrite --out when it exists")
    return p


def chosen(
    cells: pd.DataFrame, collectives: pd.DataFrame, run_ids: list[str], machine: str | None
) -> list[str]:
    """The runs packed: those of ``run_ids`` (oldest first) that machine ``machine`` measured (a
    cells run's machine from :mod:`harness.analysis.comparisons.machines`, a collectives run's the name on its
    rows); without ``machine``, all of them when they are one machine's, else a HarnessError naming
    the machines to choose from."""
    named = collectives[collectives["run_id"].isin(run_ids) & collectives["machine"].notna()]
    names = dict(zip(named["run_id"], named["machine"], strict=True))
    names |= machine_names(cells[cells["run_id"].isin(run_ids)])
    found = sorted(set(names.values()))
    if machine is None:
        if len(found) > 1:
            raise HarnessError(
                f"the runs to pack were measured on {len(found)} machines ({'; '.join(map(repr, found))}); "
                "expected one machine's runs in a pack: give --machine NAME"
            )
        return run_ids
    if machine not in found:
        raise HarnessError(
            f"Received --machine={machine!r}: no run to pack measured it; expected one of: {'; '.join(map(repr, found))}."
        )
    return [r for r in run_ids if names.get(r) == machine]


def _out_path(out: str | None, first_run: str, force: bool) -> Path:
    """Where the pack goes: ``--out``, or ``<first run id>.tar.gz`` here; an existing file only
    with ``--force``; its folder writable."""
    path = Path(out) if out is not None else Path(f"{first_run}{SUFFIX}")
    if path.exists() and not force:
        raise HarnessError(
            f"Received --out={str(path)!r}: the file exists; expected a new file, or --force to overwrite it."
        )
    check_writable_file(str(path), "--out")
    return path


def size_text(size: int) -> str:
    """A size in bytes as people read it (``812 B``, ``41.2 KiB``, ``3.0 MiB``)."""
    power = max(0, min((size.bit_length() - 1) // 10, 3))
    return f"{size} B" if not power else f"{size / 1024**power:.1f} {('KiB', 'MiB', 'GiB')[power - 1]}"


def run(args: argparse.Namespace) -> CommandResult:
    if args.out is not None and not (args.out.endswith(SUFFIX) and len(Path(args.out).name) > len(SUFFIX)):
        raise HarnessError(f"Received --out={args.out!r}; expected a file name ending {SUFFIX}.")
    root = Path(args.results)
    if root.is_file():  # a pack file is read by the other commands, not packed again
        raise HarnessError(
            f"Received --results={args.results!r}; expected a results folder (a file: pack reads the "
            "folder that `python -m harness run` wrote)."
        )
    cells, collectives = history.load_runs(root)
    all_runs = history.runs(cells, collectives)
    run_ids = [str(r) for r in all_runs["run_id"]]  # oldest first
    if args.runs is not None:  # those --runs names, each once
        named = {r for ref in args.runs for r in history.resolve(ref, all_runs, flag="--runs")}
        run_ids = [r for r in run_ids if r in named]
    run_ids = chosen(cells, collectives, run_ids, args.machine)
    out = _out_path(args.out, run_ids[0], args.force)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    packed = write_pack(root, Manifest(FORMAT, VERSION, tuple(run_ids), stamp, __version__), out)
    rows = [int(t["run_id"].isin(run_ids).sum()) for t in (cells, collectives)]
    runs = f"{len(run_ids)} run" + ("" if len(run_ids) == 1 else "s")
    print(
        f"wrote {out}: {runs}, {rows[0]} cell rows, {rows[1]} collectives rows, {packed.files} files, "
        f"{size_text(packed.size)}"
    )
    return CommandResult(0)
