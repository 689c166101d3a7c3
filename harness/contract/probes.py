"""Doctor probes: ``python -m harness.worker.probe`` prints one JSON line per fact or probe; the
parent (:mod:`harness.launch.doctor`) reads them and :mod:`harness.analysis.doctor` renders them."""

from __future__ import annotations

from enum import StrEnum

PROBE_MODULE = "harness.worker.probe"


class ProbeStatus(StrEnum):
    """A probe's outcome."""

    WORKS = "works"
    """The all-reduce summed right."""
    UNSUPPORTED = "unsupported"
    """No kernel or device here (NCCL on CPU)."""
    FAILS = "fails"
    """It raised."""
    WRONG = "wrong result"
    """It ran and returned wrong sums."""
    SKIPPED = "not probed"
    """Not probed (too few cores for its workers)."""


LOCAL_PROBES: tuple[tuple[str, str], ...] = (
    ("one_device", "-"),
    ("mirrored", "auto"),
    ("mirrored", "reduction_to_one_device"),
    ("mirrored", "hierarchical_copy"),
    ("central_storage", "-"),
    ("mirrored", "nccl"),  # last: a failed NCCL init may leave state behind
)
"""(strategy, cross-device op) of the single-process probes, in the order a probe process runs them."""


def local_probes(replicas: int) -> list[tuple[str, str]]:
    """(strategy, cross-device op) probed with ``replicas`` devices: one_device only with one;
    with one device, mirrored only with its default op (the others skip the reduce)."""
    return [(name, op) for name, op in LOCAL_PROBES
            if (name == "one_device") == (replicas == 1) or (name == "mirrored" and op == "auto")]
