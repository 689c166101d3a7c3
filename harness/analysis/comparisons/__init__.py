"""Runs compared across time and machines: the regression gate and compare, the run-to-run spread, machines matched, hardware compared."""
