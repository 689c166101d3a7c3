"""The contract between the parent and its worker processes, and with ``results/``: typed,
pure, imported by both sides (every column's unit and meaning: :mod:`~harness.contract.records`)."""
