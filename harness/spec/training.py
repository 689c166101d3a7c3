"""What every cell trains with besides its axes: the optimizer and its learning rate. Pure data.

The worker builds its optimizer from :data:`LEARNING_RATE` (:mod:`harness.worker.measure`), a
co-tenant from another framework trains at the same rate (:class:`harness.contract.tenant.TenantJob`),
and a cell's row records both (the cells table's ``optimizer`` and ``learning_rate``).
"""

from __future__ import annotations

LEARNING_RATE = 0.01
"""Plain SGD's learning rate, the same for every cell."""

OPTIMIZER = f"SGD(learning_rate={LEARNING_RATE})"
"""The optimizer every cell trains with, as its row names it."""
