"""The co-tenant from another framework: a child process that trains the suite's MNIST model in JAX
or PyTorch beside a TensorFlow cell, taking the turns the parent's coordinator grants.

It imports its framework only (never TensorFlow), answers the turns channel
(:mod:`harness.contract.turns`) as a TensorFlow worker does, and reports its facts (framework,
version, device, FLOPs per example) in its replies. ``python -m harness.foreign JOB``."""
