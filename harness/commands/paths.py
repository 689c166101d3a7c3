"""The paths a command reads and writes: the ``--results`` roots a reading command takes (one flag,
defined here for every reader), and checks of the paths a command will write, made before any work
so that a folder or file it cannot write stops the command at once (a HarnessError naming the flag,
the path and why) instead of after a run's measurements."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness.errors import HarnessError
from harness.results.pack import SUFFIX

RESULTS = "results"
"""The results folder a command reads or writes when ``--results`` is not given."""


def add_results_argument(parser: argparse.ArgumentParser, what: str = "") -> None:
    """A reading command's ``--results``: a folder or a pack file, given once or more (argparse's
    ``append``; :func:`results_roots` gives the roots, :data:`RESULTS` when none). ``what``: how the
    command uses them, appended to the help."""
    parser.add_argument(
        "--results",
        action="append",
        default=None,
        metavar="PATH",
        help="a results folder, or a pack file (.tar.gz) that `python -m harness pack` wrote; "
        "repeat it to read several together (a run held by two of them is refused)"
        + (f"; {what}" if what else "")
        + f". Default: {RESULTS}",
    )


def results_roots(args: argparse.Namespace) -> tuple[str, ...]:
    """The ``--results`` roots of a command that reads results, in the order given (as typed; the
    default folder when none): what :func:`harness.results.history.load` takes."""
    return tuple(args.results) if args.results else (RESULTS,)


def beside(root: str, name: str) -> Path:
    """Where a command writes its own ``name`` folder (``report``, ``figures``) for results root
    ``root``: inside a folder; beside a pack file, named after it (``runs.tar.gz`` ->
    ``runs-report``), as the pack's own folder is temporary."""
    path = Path(root)
    if not path.is_file():
        return path / name
    stem = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name
    return path.with_name(f"{stem}-{name}")


def _cannot_write(folder: Path, keep: bool) -> str | None:
    """Why this user cannot write to ``folder`` (made if missing), or None. ``keep=False``: the
    folders made here are removed again."""
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return e.strerror or str(e)
    finally:
        if not keep:
            for p in made:  # deepest first
                try:
                    p.rmdir()
                except OSError:
                    pass
    return None


def check_writable(out: Path, flag: str = "--results", keep: bool = True) -> None:
    """``out`` is (or can be made) a folder this user can write to; HarnessError otherwise.
    Missing folders are made; with ``keep=False`` (a dry run) the ones made here are removed again."""
    why = _cannot_write(out, keep)
    if why is not None:
        raise HarnessError(f"Received {flag}={str(out)!r}; expected a folder this user can write to ({why}).")


def check_writable_file(path: str, flag: str, keep: bool = True) -> None:
    """``path`` names a file (not a folder) in a folder this user can write to; HarnessError
    otherwise. The folder is made if missing (the command writes the file there later)."""
    p = Path(path)
    if not path.strip() or p.is_dir():
        raise HarnessError(f"Received {flag}={path!r}; expected the path of a file to write (not a folder).")
    why = _cannot_write(p.parent, keep)
    if why is not None:
        raise HarnessError(
            f"Received {flag}={path!r}; expected a file in a folder this user can write to ({why})."
        )
