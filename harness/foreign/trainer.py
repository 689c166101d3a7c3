"""What the turns loop needs of a co-tenant's framework: one training step at a time."""

from __future__ import annotations

from abc import ABC, abstractmethod

POOL_BATCHES = 8
"""Synthetic batches made once on the device and cycled (the TensorFlow side repeats a fixed pool too:
input cost near zero on both sides)."""


class Trainer(ABC):
    """A model, its optimizer (plain SGD) and its data, in one framework."""

    version: str
    """The framework's version."""

    @abstractmethod
    def step(self) -> None:
        """One optimizer update on the next batch, returning once the device has finished it."""

    @abstractmethod
    def loss(self) -> float:
        """The last update's loss."""

    @abstractmethod
    def device_name(self) -> str:
        """The device it trains on, in words."""

    @abstractmethod
    def flops_per_example(self) -> int:
        """FLOPs of one training example, counted from the traced update: 2 per multiply-add of
        every matrix product and convolution (the TensorFlow side's convention)."""
