"""The contract between the parent and its worker processes, and with ``results/``: typed,
pure, imported by both sides.

- :mod:`~harness.contract.job`: the :class:`Job` a worker reads (cell, run options, its launch);
- :mod:`~harness.contract.events`: the :class:`Event` lines a worker appends, as typed records;
- :mod:`~harness.contract.records`: one row of each table of ``results/`` (a module per table),
  :class:`Status`, and every column's unit and meaning (the parquet schema and
  ``results/README.md`` derive from them);
- :mod:`~harness.contract.probes`: ``doctor``'s probes and their :class:`ProbeStatus`.
"""
