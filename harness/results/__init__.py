"""Results: the parquet schema and store (the only writer of ``results/``), the history and its run
references, and the rows, each made by its caller's module:
:mod:`harness.results.measurement` (the worker's row of one process), :mod:`harness.results.aggregate`
(the launcher's row of a cell from its processes), :mod:`harness.results.references` (a row against
the run's baselines, peak and history), :mod:`harness.results.ratios`, :mod:`harness.results.cost`
and :mod:`harness.results.collectives`.
"""
