"""``python -m harness.foreign JOB``: one co-tenant process (see :mod:`harness.foreign.main`)."""

import sys

from harness.foreign.main import main

sys.exit(main(sys.argv[1:]))
