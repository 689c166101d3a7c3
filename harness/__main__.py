"""``python -m harness``: see :mod:`harness.commands`."""

from harness.commands import console

console()
