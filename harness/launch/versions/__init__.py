"""Builds compared: A/B pairs, nightly against a reference, bisect between two builds, and the environments each side runs in."""
