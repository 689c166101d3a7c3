"""What the parent hands a co-tenant process of another framework, and what it reports back.

The parent writes a :class:`TenantJob` as JSON and starts ``python -m harness.foreign JOB``
(:mod:`harness.foreign`). The process speaks the turns channel (:mod:`harness.contract.turns`) under
the key ``tenant_key``, with two additions for the turns in which both sides run at once:

parent -> co-tenant                          co-tenant -> parent
``{"do": "window", "block": b, "until": "stop"}``  (nothing yet: it trains, step after step, until)
``{"do": "stop"}``                           ``{"done": "window", "steps": n, "seconds": s, "cpu_s": c}``:
                                             the n whole steps that ended before the stop, their seconds

and its finishing reply carries its :class:`TenantFacts`. Pure data."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TypedDict

from harness.spec.training import LEARNING_RATE

TENANT_FAULT_ENV = "HARNESS_TENANT_FAULT"
"""Test hook: ``startup`` makes the co-tenant fail after its first step, before it joins the turns;
``gpu`` asks it for a GPU whatever the cell's device (without one, it fails for want of a GPU)."""

UNTIL_STOP = "stop"
"""``Grant["until"]``: train until the parent says stop (a turn taken together)."""


@dataclass(frozen=True)
class TenantJob:
    """One co-tenant process: train ``model`` at ``batch`` examples per step (plain SGD at the
    cells' learning rate, :data:`harness.spec.training.LEARNING_RATE`; synthetic MNIST-shaped data
    from ``seed``) in ``framework`` on ``device`` (``cpu`` or ``gpu``: the first GPU it sees), and
    take turns as ``tenant_key``."""

    framework: str
    model: str
    batch: int
    device: str
    tenant_key: str
    seed: int = 0
    learning_rate: float = LEARNING_RATE

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> TenantJob:
        return cls(**json.loads(text))


class TenantFacts(TypedDict, total=False):
    """What a co-tenant reports in its finishing reply: its framework's version, the device it ran
    on, its compile (first step) seconds, its FLOPs per training example counted from its own traced
    step (2 per multiply-add of every matrix product and convolution, as the TensorFlow side counts),
    and its last loss."""

    framework: str
    version: str
    device: str
    compile_s: float
    flops_per_example: int | None
    flops_note: str
    final_loss: float
