"""Pack files: some runs of a results folder in one ``.tar.gz`` that travels (``python -m harness
pack``), and reading one back as a results folder.

A pack holds, for each of its runs, the files of the run tables (``<table>/<date>/<run_id>/*.parquet``
for :data:`RUN_TABLES`) and its journal (``journal/<run_id>.jsonl``), at the paths they have under
the results folder, plus ``pack.json`` (:class:`Manifest`: the format's name and version, the run
ids, when it was packed, the suite's version). Reading a pack checks the manifest, refuses a member
outside that layout, and extracts it with tarfile's ``data`` filter (no links out, no devices, no
absolute paths) into a temporary folder that lives as long as the process (removed at exit); the
same pack is extracted once per process."""

from __future__ import annotations

import atexit
import io
import json
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.results import journal
from harness.results.store import AB_FOLDER, atomic, table_files

FORMAT = "tf-strategy-bench pack"
"""The manifest's ``format``: what tells a pack from any other ``.tar.gz``."""
VERSION = 1
"""The manifest's ``format_version`` this suite writes and reads."""
MANIFEST = "pack.json"
"""The manifest's name inside a pack."""
SUFFIX = ".tar.gz"
"""How a pack file's name ends."""
RUN_TABLES = ("cells", "windows", "ratios", "costs", "collectives")
"""The tables a pack holds a run's files of (each ``<table>/<date>/<run_id>/``)."""

_LAYOUT = (*RUN_TABLES, journal.FOLDER)
"""The folders a pack's members may lie in (besides the manifest)."""


@dataclass(frozen=True)
class Manifest:
    """``pack.json``: what a pack is and holds."""

    format: str
    """:data:`FORMAT`."""
    format_version: int
    """:data:`VERSION` when written by this suite."""
    run_ids: tuple[str, ...]
    """The runs packed, oldest first."""
    packed_at: str
    """When it was packed: UTC, ISO 8601 (``2026-11-28T04:12:09Z``)."""
    suite_version: str
    """The version of the suite that packed it (``harness.__version__``)."""

    def to_json(self) -> bytes:
        return (json.dumps(asdict(self), indent=2) + "\n").encode()


@dataclass(frozen=True)
class Packed:
    """What :func:`write_pack` wrote."""

    path: Path
    manifest: Manifest
    files: int
    """Files packed (tables' files and journals; the manifest not counted)."""
    size: int
    """The pack's size, in bytes."""


@dataclass(frozen=True)
class Opened:
    """A pack read back: the folder it was extracted to (a results folder) and its manifest."""

    folder: Path
    manifest: Manifest


class NotAPack(Exception):
    """Why a file is not a pack this suite reads (the reason, in words)."""


def run_files(root: Path, run_id: str) -> list[Path]:
    """Run ``run_id``'s files under results folder ``root``: its table files (:data:`RUN_TABLES`,
    temporary files of writes under way left out), then its journal if it has one; paths under
    ``root``."""
    files = [f for table in RUN_TABLES for f in table_files(root / table) if f.parent.name == run_id]
    kept = journal.path_of(root, run_id)
    return files + ([kept] if kept.is_file() else [])


def stored_runs(root: Path) -> frozenset[str]:
    """The run ids ``root`` holds files of: a folder of a run table (``<table>/<date>/<run_id>``,
    under ``root`` or its ``ab`` folder) or a journal. Read from the folder names alone: cheap."""
    ids = set(journal.run_ids(root))
    for base in (root, root / AB_FOLDER):
        for table in RUN_TABLES:
            ids |= {p.name for p in (base / table).glob("*/*") if p.is_dir() and not p.name.startswith(".")}
    return frozenset(ids)


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A member without its owner's names and ids (a pack travels), readable by everyone."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o644
    return info


def write_pack(root: Path, manifest: Manifest, out: Path) -> Packed:
    """Pack the manifest's runs of results folder ``root`` into ``out`` (written to a temporary
    name in its folder, then renamed: a reader never sees half a pack; an existing ``out`` is
    replaced, so the caller decides whether it may be)."""
    files = [f for run_id in manifest.run_ids for f in run_files(root, run_id)]
    with atomic(out) as tmp, tarfile.open(tmp, "w:gz") as tar:
        data = manifest.to_json()
        info = _plain(tarfile.TarInfo(MANIFEST))
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for f in files:
            tar.add(f, arcname=f.relative_to(root).as_posix(), recursive=False, filter=_plain)
    return Packed(out, manifest, len(files), out.stat().st_size)


def _manifest(tar: tarfile.TarFile) -> Manifest:
    """The pack's manifest, checked: this format, a version this suite reads."""
    try:
        member = tar.extractfile(MANIFEST)
    except KeyError:
        raise NotAPack(f"it holds no {MANIFEST}") from None
    if member is None:
        raise NotAPack(f"its {MANIFEST} is not a file")
    try:
        raw = json.loads(member.read())
    except ValueError as e:
        raise NotAPack(f"its {MANIFEST} is not JSON: {e}") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        name = raw.get("format") if isinstance(raw, dict) else None
        raise NotAPack(f"its {MANIFEST} names format {name!r}, not {FORMAT!r}")
    version = raw.get("format_version")
    if version != VERSION:
        raise NotAPack(f"format version {version!r}; this suite reads version {VERSION}")
    run_ids = raw.get("run_ids")
    if not isinstance(run_ids, list) or not all(isinstance(r, str) and r for r in run_ids):
        raise NotAPack(f"its {MANIFEST} has no list of run ids")
    return Manifest(
        FORMAT, VERSION, tuple(run_ids), str(raw.get("packed_at", "")), str(raw.get("suite_version", ""))
    )


_SCRATCH: list[Path] = []
"""The process's one temporary folder for extracted packs (made on first use, removed at exit)."""
_OPENED: dict[tuple[Path, int, int], Opened] = {}
"""Packs extracted by this process, by (resolved path, size in bytes, mtime in ns)."""


def _scratch() -> Path:
    """The process's folder for extracted packs, removed when the process exits."""
    if not _SCRATCH:
        folder = Path(tempfile.mkdtemp(prefix="harness-packs-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _SCRATCH.append(folder)
    return _SCRATCH[0]


def _extract(path: Path) -> Opened:
    """Check and extract the pack at ``path`` into a new folder of :func:`_scratch`."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            manifest = _manifest(tar)
            for name in tar.getnames():  # the manifest, or in a folder of a results folder's layout
                if name != MANIFEST and name.split("/", 1)[0] not in _LAYOUT:
                    raise NotAPack(f"it holds {name!r}, outside a results folder's {', '.join(_LAYOUT)}")
            folder = Path(tempfile.mkdtemp(dir=_scratch(), prefix="pack-"))
            tar.extractall(folder, filter="data")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise NotAPack(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    held = stored_runs(folder)
    if held != set(manifest.run_ids):
        raise NotAPack(
            f"its {MANIFEST} names runs {', '.join(sorted(manifest.run_ids)) or 'none'} but it holds "
            f"{', '.join(sorted(held)) or 'none'}"
        )
    return Opened(folder, manifest)


def open_pack(path: Path) -> Opened:
    """The pack at ``path`` read back as a results folder (extracted once per process, the folder
    removed at exit); :class:`NotAPack` saying why when it is not a pack this suite reads."""
    st = path.stat()
    key = (path.resolve(), st.st_size, st.st_mtime_ns)
    if key not in _OPENED:
        _OPENED[key] = _extract(path)
    return _OPENED[key]


def not_a_pack(given: str, why: str, flag: str = "--results") -> HarnessError:
    """The error for a path given as a results root that is neither a folder nor a pack."""
    return HarnessError(
        f"Received {flag}={given!r}: not a results folder or a pack file written by `harness pack` "
        f"({why}); expected a folder that `python -m harness run` wrote, or a {SUFFIX} that "
        "`python -m harness pack` wrote."
    )
