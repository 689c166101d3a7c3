"""What the turns loop needs of a co-tenant's framework: one training step at a time."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

from harness.contract.tenant import TenantJob

POOL_BATCHES = 8
"""Synthetic batches made once on the device and cycled (the TensorFlow side repeats a fixed pool too:
input cost near zero on both sides)."""

CLASSES = 10
"""MNIST's classes: the models' outputs and the synthetic labels' range."""


class ForeignTrainer(ABC):
    """A model, its optimizer (plain SGD) and its data, in one framework."""

    version: str
    """The framework's version."""
    platform: str
    """The kind of device it trains on: ``gpu`` or ``cpu``."""
    _batch: int = 0
    _loss: Any = None

    def step(self) -> None:
        """One optimizer update on the next batch of the pool."""
        self._loss = self._update(self._batch)
        self._batch = (self._batch + 1) % POOL_BATCHES

    def loss(self) -> float:
        """The last update's loss (NaN before the first)."""
        return math.nan if self._loss is None else float(self._loss)

    @abstractmethod
    def _update(self, batch: int) -> Any:
        """One optimizer update on batch ``batch`` of the pool, returning once the device has
        finished it; its loss (a scalar of the framework)."""

    @abstractmethod
    def device_name(self) -> str:
        """The device it trains on, in words."""

    @abstractmethod
    def flops_per_example(self) -> int:
        """FLOPs of one training example, counted from the traced update: 2 per multiply-add of
        every matrix product and convolution (the TensorFlow side's convention)."""


class NoGpu(RuntimeError):
    """A co-tenant asked for a GPU has none: it would train on the CPU, a figure that must not stand
    for a GPU cell."""


def no_gpu(framework: str, why: str) -> NoGpu:
    """The error of ``framework`` finding no GPU, ``why`` in its own words."""
    return NoGpu(f"{framework} found no GPU: {why} (it would run on the CPU)")


def check_device(job: TenantJob, trainer: ForeignTrainer) -> None:
    """Raise :class:`NoGpu` when ``job`` asks for a GPU and ``trainer`` trains elsewhere."""
    if job.device == "gpu" and trainer.platform != "gpu":
        raise no_gpu(job.framework, f"it trains on {trainer.device_name()}")
