"""``python -m harness``: see :mod:`harness.commands`."""

import sys

from harness.commands import main

sys.exit(main())
