"""The transports NCCL chose for this process's connections (P2P over NVLink/PCIe, shared memory,
the network), read from its INFO log.

Local multi-worker cells give each worker a disjoint ``CUDA_VISIBLE_DEVICES``, which may move NCCL
off P2P/NVLink onto shared memory or sockets; the row records what it used. The launcher turns the
log on for GPU cells (``NCCL_DEBUG=INFO`` into ``NCCL_DEBUG_FILE``, unless the user set NCCL_DEBUG)."""

from __future__ import annotations

import re
from pathlib import Path

LOG_FILE_ENV = "NCCL_DEBUG_FILE"
"""NCCL writes its log there; ``%p`` in the name is the process id."""

_VIA = re.compile(r"NCCL INFO Channel .* via ((?:P2P|NET)/[^/\s]+|[^/\s]+)")


def transports(log: str) -> list[str]:
    """The distinct transports in NCCL INFO channel lines, e.g. ``... 0[0] -> 1[1] via
    P2P/CUMEM/read`` -> P2P/CUMEM, ``via SHM/direct/direct`` -> SHM, ``via NET/Socket/0`` ->
    NET/Socket; in order of first appearance."""
    return list(dict.fromkeys(_VIA.findall(log)))


def process_transports(pattern: str | None, pid: int) -> str | None:
    """This process's transports from its NCCL log (``pattern`` with ``%p``), comma-separated;
    None when there is no log (no GPU cell, NCCL unused, or the user's own NCCL_DEBUG)."""
    if not pattern:
        return None
    try:
        text = Path(pattern.replace("%p", str(pid))).read_text(errors="replace")
    except OSError:
        return None
    return ",".join(transports(text)) or None
