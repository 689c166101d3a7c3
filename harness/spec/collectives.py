"""What ``--sweep collectives`` times: the payloads of one all-reduce. Pure data.

A **payload** is the list of float32 tensor shapes each participant contributes to one all-reduce
call: one tensor per size of the size sweep (4 KiB to 256 MiB, powers of 4, capped by
``max_bytes``), and each model's gradient set (one tensor per trainable variable, as the optimizer
hands them over). The topology (strategy, cross-device op or communication, replicas, workers) is
an ordinary :class:`harness.spec.cell.Cell` of the collectives sweep
(:func:`harness.spec.sweeps.collectives_sweep`), so the unsupported rules apply to it unchanged."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.errors import HarnessError

FLOAT32_BYTES = 4

SIZES: tuple[int, ...] = tuple(4**k * 1024 for k in range(1, 10))
"""Bytes per participant of the size sweep: 4 KiB, 16 KiB, ..., 256 MiB."""

DEFAULT_MAX_BYTES = 64 * 2**20
"""The size sweep stops here unless ``--max-bytes`` says otherwise (64 MiB: about ten minutes for
the default collectives sweep on a 2-core machine)."""

GRADIENT_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "cnn": ((3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (1600, 10), (10,)),
    "dense": ((784, 128), (128,), (128, 10), (10,)),
}
"""Each model's trainable variables (Keras kernel and bias shapes, in the model's order); a test
checks them against the built models."""


@dataclass(frozen=True)
class Payload:
    """One all-reduce call's input on each participant: ``name`` is ``bytes`` (the size sweep) or a
    model (its gradient set)."""

    name: str
    shapes: tuple[tuple[int, ...], ...]

    @property
    def bytes(self) -> int:
        """Bytes each participant contributes (float32)."""
        return FLOAT32_BYTES * sum(math.prod(s) for s in self.shapes)


def payloads(max_bytes: int = DEFAULT_MAX_BYTES) -> list[Payload]:
    """The size sweep up to ``max_bytes``, then each model's gradient set."""
    if max_bytes < SIZES[0]:
        raise HarnessError(
            f"Received --max-bytes={max_bytes}; expected at least {SIZES[0]} (the smallest size, 4 KiB)."
        )
    sweep = [Payload("bytes", ((n // FLOAT32_BYTES,),)) for n in SIZES if n <= max_bytes]
    return sweep + [Payload(model, shapes) for model, shapes in GRADIENT_SHAPES.items()]
