"""The child side: the only package that imports TensorFlow.

A worker process (``python -m harness.worker JOB EVENTS``) sets up its devices, builds the cell
(:mod:`harness.worker.training`), times it (:mod:`harness.worker.timing`), checks it
(:mod:`harness.worker.checks`) and reports events through :mod:`harness.contract.job`."""
