"""A benchmark suite for training the MNIST CNN and a dense model under every tf.distribute strategy.

The parent process (``python -m harness``) never imports TensorFlow: it expands sweeps, launches one
worker process per cell, and writes results. Workers (:mod:`harness.worker`) measure."""

__version__ = "0.1.0"
