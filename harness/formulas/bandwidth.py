"""nccl-tests' bandwidth figures of an all-reduce (results/README.md, "The collectives table"). Pure.
busbw = algbw x 2(n - 1) / n: a ring all-reduce moves 2(n-1)/n x m over each link, so busbw is
comparable with a link's bandwidth whatever n."""

from __future__ import annotations


def algbw_gbps(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth (GB/s, 1e9 bytes) of moving ``nbytes`` in ``seconds``."""
    return nbytes / seconds / 1e9


def busbw_gbps(nbytes: float, seconds: float, participants: int) -> float:
    """Bus bandwidth (GB/s) of an all-reduce of ``nbytes`` per participant among ``participants``."""
    return algbw_gbps(nbytes, seconds) * 2 * (participants - 1) / participants
