"""``python -m harness``: see :mod:`harness.commands`."""

import os
import sys

from harness.commands import main

try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:  # `python -m harness list | head`: the reader left; end as SIGPIPE would
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 128 + 13
sys.exit(code)
