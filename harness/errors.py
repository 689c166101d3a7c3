"""The harness's one error type, and the exit codes every command uses.

Commands and the code under them raise :class:`HarnessError` with the exit code that fits; the
command dispatcher (:func:`harness.commands.main`) prints ``error: <message>`` and returns that code.
Messages name the bad value and what is accepted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1
"""A finding the user must act on: a regression, a cell that disagrees, TensorFlow that cannot start."""
EXIT_USAGE = 2
"""Bad input (a value, a reference, a file) or unreadable results: nothing was judged."""
EXIT_SHORT_HISTORY = 3
"""compare: too few baseline runs to judge any series."""
EXIT_INTERRUPTED = 130
"""Ctrl-C or SIGTERM: every row measured before is kept."""


class HarnessError(Exception):
    """Anything the user can fix, with the exit code the command ends with (default: bad input)."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def require(checks: Mapping[str, tuple[Any, bool, str]]) -> None:
    """Validate a configuration object's fields: ``checks`` maps each flag (``--repeats``) to
    (value, whether it is acceptable, what is accepted); the first bad one raises HarnessError
    naming the value and the accepted ones."""
    for flag, (value, ok, accepted) in checks.items():
        if not ok:
            raise HarnessError(f"Received {flag}={value!r}; expected {accepted}.")
