"""Checks of the paths a command will write, made before any work so that a folder or file it
cannot write stops the command at once (a HarnessError naming the flag, the path and why) instead
of after a run's measurements."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.errors import HarnessError


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
