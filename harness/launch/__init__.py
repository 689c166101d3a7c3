"""The parent side: the only package that starts processes or sets their environment. Six rooms,
each using only those below it: versions, sweep, nodes, instances, cells, system.

It never imports TensorFlow or :mod:`harness.worker` (an import-linter contract checks it):
:mod:`~harness.contract.job` is the typed job and event contract both sides share."""
