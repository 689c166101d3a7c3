"""``python -m harness.worker JOB EVENTS``: one worker process (see :mod:`harness.worker.main`).

It leaves with ``os._exit`` once its record is written and its output flushed: the interpreter's
and TensorFlow's teardown cost seconds per process (12-50 s measured for the last of 8 live
members on 2 cores) and nothing of it is needed."""

import os
import sys

from harness.worker.main import main

code = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
