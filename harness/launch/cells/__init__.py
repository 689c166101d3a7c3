"""One cell's processes: one worker, a local cluster, co-tenants; the matmul peak and the doctor's probes; the run's progress line."""
