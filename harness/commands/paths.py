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


def add_figures(parser: argparse.ArgumentParser) -> None:
    """``--figures DIR``: where a reading command draws its figures (:func:`out_folder`)."""
    parser.add_argument(
        "--figures",
        default=None,
        help="figure folder. Default: the first --results folder's figures/ (beside a pack file: NAME-figures)",
    )


def out_folder(args: argparse.Namespace, flag: str, name: str) -> Path:
    """The folder ``flag`` (``--figures``, ``--report-dir``) names, checked writable
    (:func:`check_writable`); not given, the first ``--results`` root's own ``name`` folder: inside
    a folder; beside a pack file, named after it (``runs.tar.gz`` -> ``runs-report``), as the
    pack's own folder is temporary."""
    given = getattr(args, flag[2:].replace("-", "_"))
    root = Path(results_roots(args)[0])
    stem = root.name[: -len(SUFFIX)] if root.name.endswith(SUFFIX) else root.name
    out = Path(given) if given else root.with_name(f"{stem}-{name}") if root.is_file() else root / name
    check_writable(out, flag)
    return out


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


def add_markdown(parser: argparse.ArgumentParser, what: str) -> None:
    """``--markdown FILE``: also write ``what`` (the result, the summary) as markdown."""
    parser.add_argument(
        "--markdown", default=None, metavar="FILE", help=f"also write {what} as markdown for a CI comment"
    )


def write_markdown(path: str | None, text: str) -> None:
    """``--markdown``'s file ``path`` (its folder made if missing), and a line saying so; nothing when
    ``path`` is None."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        print(f"wrote {path}")
