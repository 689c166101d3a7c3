"""The co-tenant from another framework: a child process that trains the suite's MNIST model in JAX
or PyTorch beside a TensorFlow cell, taking the turns the parent's coordinator grants. It imports
its framework only (never TensorFlow) and answers the turns channel as a TensorFlow worker does."""
