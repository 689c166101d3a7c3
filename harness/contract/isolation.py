"""The network namespace a local cluster's tasks share (:mod:`harness.worker.netns`, the holder and
the join; :mod:`harness.launch.system.isolation`, the parent's side; why: docs/explanation/multi-worker.md,
"Ports and the network"). Pure data. The holder (``python -m harness.worker.netns``) prints one
line, ``{"ready": pid, "join": [path, ...]}``, and keeps the namespace until its stdin closes; every
task of the cell joins it (:data:`NETNS_ENV`) before TensorFlow starts."""

from __future__ import annotations

import os

HOLDER_MODULE = "harness.worker.netns"
"""``python -m harness.worker.netns hold``: the holder; ``... join MODULE ARGS...``: join the
namespaces named by :data:`NETNS_ENV`, then run ``python -m MODULE ARGS...``."""

NETNS_ENV = "HARNESS_NETNS"
"""The namespace files a task joins, in order (``/proc/PID/ns/user`` where the holder needed a
user namespace, then ``/proc/PID/ns/net``), separated by ``os.pathsep``; empty or unset: none."""

NO_NAMESPACE_FAULT = "no-namespace"
"""Test hook (in ``HARNESS_INJECT_FAULT``): the holder's ``unshare`` fails as on a system that
forbids namespaces (EPERM)."""


def join_value(paths: list[str]) -> str:
    """:data:`NETNS_ENV`'s value for ``paths``."""
    return os.pathsep.join(paths)


def join_paths(value: str | None) -> list[str]:
    """The namespace files in :data:`NETNS_ENV`'s ``value`` (none for empty or unset)."""
    return [p for p in (value or "").split(os.pathsep) if p]


def joined_argv(argv: list[str], env: dict[str, str]) -> list[str]:
    """A fresh interpreter's ``-m MODULE ARGS...`` run through the join (``-m`` :data:`HOLDER_MODULE`
    ``join MODULE ARGS...``) where ``env`` names namespaces; else ``argv`` unchanged."""
    if not join_paths(env.get(NETNS_ENV)) or argv[:1] != ["-m"]:
        return argv
    return ["-m", HOLDER_MODULE, "join", *argv[1:]]
