"""After-cell checks inside the worker: integrity (replicas, distributed variables, equal copies,
all-reduce sums) and misconfiguration diagnosis (built outside ``strategy.scope()``, idle replicas)."""
