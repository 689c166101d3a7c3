"""What every cell trains with besides its axes: its optimizer's learning rate (the optimizer is
the ``optimizer`` axis), and the updates after which cells' losses compare. Pure data.

The worker builds its optimizer at :data:`LEARNING_RATE` (:mod:`harness.worker.measure`), a
co-tenant from another framework trains at the same rate (:class:`harness.contract.tenant.TenantJob`),
and a cell's row records it (the cells table's ``learning_rate``)."""

from __future__ import annotations

LEARNING_RATE = 0.01
"""The learning rate of every cell's optimizer."""
MIN_SAME_UPDATES = 8
"""The fewest updates after which two cells' losses are compared (:func:`same_updates`)."""


def same_updates(multiple: int) -> int:
    """The smallest multiple of ``multiple`` (a steps_per_execution, or several's least common
    multiple) at or above :data:`MIN_SAME_UPDATES`: the updates ``verify`` trains by default, and
    those after which a timed process records its ``seed_loss`` (both from the run's seed)."""
    return multiple * -(-MIN_SAME_UPDATES // multiple)
