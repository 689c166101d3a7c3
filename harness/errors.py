"""The harness's one error type and its exit codes."""

from __future__ import annotations

EXIT_USAGE = 2


EXIT_INTERRUPTED = 130


class SpecError(ValueError):
    """A user-supplied value that the suite does not accept. The message names value and choices."""
