"""A run's journal: one JSON object per line, appended durably as the run goes, from which the run
is resumed and every row rebuilt (``python -m harness run --resume RUN_ID``; results/README.md,
"Layout"). Its first line is the plan (``kind: "plan"``), then one line per event the run's state
depends on (what each kind holds is :mod:`harness.launch.instances.resume`'s business). Each line is written
with one ``write`` and ``fsync``-ed before the run goes on, so after a SIGKILL, a power cut or a full
disk the journal holds every line appended before, and at worst a last line cut short, which
reading drops (and reopening cuts off, so the next line starts clean)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

FOLDER = "journal"
"""The journals' folder under a results root."""

SUFFIX = ".jsonl"

Entry = dict[str, Any]
"""One journal line: ``kind`` and that kind's fields."""


def path_of(root: Path, run_id: str) -> Path:
    """Where run ``run_id``'s journal lives under results root ``root``."""
    return root / FOLDER / f"{run_id}{SUFFIX}"


def _fsync_dir(folder: Path) -> None:
    """Make a new file's name durable (its folder's entry), where the OS allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _complete_length(data: bytes) -> int:
    """Bytes of ``data`` up to and including its last newline: the lines written in full."""
    return data.rfind(b"\n") + 1


class Journal:
    """An open journal that entries are appended to (one ``write`` and an ``fsync`` each)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self._fd = path, fd

    @classmethod
    def create(cls, path: Path, plan: Mapping[str, Any]) -> Journal:
        """A new journal whose first line is ``plan``; a journal already there is an error."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        journal = cls(path, fd)
        journal.append({**plan, "kind": "plan"})
        _fsync_dir(path.parent)
        return journal

    @classmethod
    def reopen(cls, path: Path) -> Journal:
        """An existing journal, opened to append: a last line cut short (the write a kill or a full
        disk interrupted) is cut off first."""
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        data = path.read_bytes()
        if _complete_length(data) < len(data):
            os.ftruncate(fd, _complete_length(data))
            os.fsync(fd)
        return cls(path, fd)

    def append(self, entry: Mapping[str, Any]) -> None:
        """Append ``entry`` as one line and wait until it is on disk."""
        line = (json.dumps(entry, separators=(",", ":"), default=str) + "\n").encode()
        written = os.write(self._fd, line)
        if written != len(line):  # a full disk can write part of it: the line is cut off on reopen
            raise OSError(
                28, f"No space left on device: wrote {written} of {len(line)} bytes", str(self.path)
            )
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read(path: Path) -> list[Entry]:
    """Every entry of a journal, in order; a last line cut short is dropped. A line in the middle
    that is not an entry, or a first line that is not the plan, is a HarnessError naming it."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise HarnessError(f"cannot read the journal {path}: {e.strerror or e}") from None
    entries: list[Entry] = []
    for number, line in enumerate(data[: _complete_length(data)].splitlines(), 1):
        try:
            entry = json.loads(line)
        except ValueError:
            raise HarnessError(
                f"the journal {path} is corrupt at line {number} (not JSON); it cannot be resumed"
            ) from None
        if not isinstance(entry, dict) or "kind" not in entry:
            raise HarnessError(f"the journal {path} is corrupt at line {number} (no entry kind)")
        entries.append(entry)
    if not entries or entries[0]["kind"] != "plan":
        raise HarnessError(f"the journal {path} has no plan line: it is not a run's journal")
    return entries


def run_ids(root: Path) -> list[str]:
    """The runs with a journal under ``root``, oldest first (run ids sort by start time)."""
    folder = root / FOLDER
    if not folder.is_dir():
        return []
    return sorted(p.name[: -len(SUFFIX)] for p in folder.glob(f"*{SUFFIX}") if not p.name.startswith("."))


def find(root: Path, ref: str) -> Path:
    """The journal of run ``ref`` (a run id, or ``latest``) under ``root``; a HarnessError naming
    the journals there when there is none."""
    ids = run_ids(root)
    if not ids:
        raise HarnessError(
            f"no run journal under {root / FOLDER}: only runs started by this version of the suite "
            "can be resumed; expected --results DIR where the run wrote its results"
        )
    if ref == "latest":
        return path_of(root, ids[-1])
    if ref not in ids:
        shown = ", ".join(ids[-5:])
        raise HarnessError(
            f"no journal of run {ref!r} under {root / FOLDER}; the latest: {shown} (or 'latest')"
        )
    return path_of(root, ref)
