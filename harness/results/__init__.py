"""Results: the parquet schema and store (the only writer of ``results/``), the history and its run
references, pytest-benchmark ingest, and :mod:`harness.results.rows`, where every row is assembled.
"""
