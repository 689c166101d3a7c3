"""What to measure: axes, the cell, protocol and platform, unsupported rules, named sweeps.

Pure data and pure functions: no TensorFlow, no processes, no files. Everything else imports from here;
this package imports nothing else of the harness but :mod:`harness.errors`."""
