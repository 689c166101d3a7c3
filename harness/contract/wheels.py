"""A TensorFlow build on the package index, as ``bisect`` steps through them and a side installs one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wheel:
    """One TensorFlow wheel on the package index: its distribution, exact version and date."""

    dist: str
    version: str
    date: str
    """The build's day, ``YYYY-MM-DD``: a nightly's from its version (``devYYYYMMDD``), a
    release's from its wheel's upload time."""

    @property
    def spec(self) -> str:
        """What pip installs, e.g. ``tf-nightly-cpu==2.21.0.dev20250818``."""
        return f"{self.dist}=={self.version}"

    @property
    def nightly(self) -> bool:
        return ".dev" in self.version
