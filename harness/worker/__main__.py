"""``python -m harness.worker JOB EVENTS``: one worker process (see :mod:`harness.worker.main`)."""

import sys

from harness.worker.main import main

sys.exit(main(sys.argv[1:]))
