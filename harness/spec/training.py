"""What every cell trains with besides its axes: its optimizer's learning rate (the optimizer is
the ``optimizer`` axis). Pure data.

The worker builds its optimizer at :data:`LEARNING_RATE` (:mod:`harness.worker.measure`), a
co-tenant from another framework trains at the same rate (:class:`harness.contract.tenant.TenantJob`),
and a cell's row records it (the cells table's ``learning_rate``).
"""

from __future__ import annotations

LEARNING_RATE = 0.01
"""The learning rate of every cell's optimizer."""
