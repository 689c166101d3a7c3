"""The fork server's channel: how the parent asks a server that has imported TensorFlow for a worker
(:mod:`harness.worker.forkserver`, :mod:`harness.launch.system.forks`; why: docs/explanation/measurement.md,
"Where the time goes"). The worker runs from ``main`` on exactly what a fresh one runs.

One connection per worker, one JSON object per line:

parent -> server (:class:`Spawn`)              server -> parent
``{"module": ..., "argv": [...], "env": {...},`` ``{"pid": n}`` once forked, then
``"log": path, "out": path, "cwd": path}``     ``{"exit": code}`` when it ended (a negative code: the
                                               signal that ended it)

It forks only :data:`PROGRAMS`: a worker, and the matmul-peak process (else a fresh interpreter,
9-15 s on a GPU host, twice a run). The server's first stdout line is ``{"ready": pid}`` once it
listens. Pure data: no sockets here."""

from __future__ import annotations

from typing import TypedDict

FORKED_ENV = "HARNESS_FORKED"
"""Set (to the server's pid) in a worker forked from a fork server; absent in a fresh interpreter."""

PER_PROCESS_ENV = ("TF_CONFIG", "NCCL_DEBUG_FILE")
"""Variables a worker reads only after its start (TensorFlow's cluster resolver, NCCL's first
use), so workers that differ only in them share a server. Every ``HARNESS_*`` variable is also
per process (read by the harness's own worker code). Any other difference in the environment, or
another interpreter, gets a server of its own: a variable TensorFlow reads at import
(``TF_ENABLE_ONEDNN_OPTS``, ``TF_CPP_MIN_LOG_LEVEL``, ``CUDA_VISIBLE_DEVICES`` to be safe) must
have been set when the server imported it."""

PER_PROCESS_PREFIX = "HARNESS_"

SERVER_MODULE = "harness.worker.forkserver"
"""``python -m harness.worker.forkserver SOCKET``."""

WORKER_MODULE = "harness.worker"

PROGRAMS = {WORKER_MODULE: "harness.worker.main", "harness.worker.peak": "harness.worker.peak"}
"""What a server forks: ``python -m`` NAME -> the module whose ``main(argv)`` the child runs."""


class Spawn(TypedDict):
    """A request for one process: the program (``python -m`` ``module``, one of :data:`PROGRAMS`),
    its arguments, its whole environment, the files its stderr (``log``) and stdout (``out``) go
    to, and its working directory."""

    module: str
    argv: list[str]
    env: dict[str, str]
    log: str
    out: str
    cwd: str


def server_env(env: dict[str, str]) -> dict[str, str]:
    """The part of a worker's environment that decides its server (see :data:`PER_PROCESS_ENV`)."""
    return {k: v for k, v in env.items() if k not in PER_PROCESS_ENV and not k.startswith(PER_PROCESS_PREFIX)}
