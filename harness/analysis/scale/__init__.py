"""Scaling: one machine's model from its 1-device step and the all-reduce cost, the step across nodes, links compared and their figures."""
