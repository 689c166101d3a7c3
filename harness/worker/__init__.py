"""The child side: the only package that imports TensorFlow. A worker process
(``python -m harness.worker JOB EVENTS``, :mod:`harness.worker.main`) measures one cell."""
