"""A run's budget as one pure value (:class:`Budget`): the seconds spent, those kept for later, and
whether the next piece of work fits. The chief of a cluster, a run in turns and a nightly night
each ask it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """A budget where it stands, in seconds: the whole (``--budget-min``), the seconds spent so far
    (earlier sessions' included), those kept for work due after (``reserve_s``: the run's end, say),
    and the ``share`` of the whole that this work may take."""

    budget_s: float
    spent_s: float
    reserve_s: float = 0.0
    share: float = 1.0

    @property
    def until_s(self) -> float:
        """Seconds into the budget by which this work must have ended: :attr:`share` of it, less
        :attr:`reserve_s`."""
        return self.share * self.budget_s - self.reserve_s

    @property
    def left_s(self) -> float:
        """Seconds left until :attr:`until_s` (below 0 once past it)."""
        return self.until_s - self.spent_s

    def fits(self, seconds: float) -> bool:
        """Whether work of ``seconds`` started now ends by :attr:`until_s`."""
        return self.spent_s + seconds <= self.until_s
