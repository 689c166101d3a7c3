"""Results: the parquet schema and store (the only writer of ``results/``), the history and its run
references, and the rows, each made by its caller's module."""
