"""Local clusters off the network: the parent's side of :mod:`harness.contract.isolation`
(docs/explanation/multi-worker.md, "Ports and the network"). :func:`namespace` holds one network
namespace (with only loopback) for the tasks of one local cell; :func:`check` says once per process
whether this machine allows it."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from harness.contract.isolation import HOLDER_MODULE, NETNS_ENV, join_value
from harness.launch.system.forks import start_child
from harness.launch.system.process import harness_path
from harness.spec.protocol import Platform

READY_TIMEOUT_S = 30.0
"""Seconds a holder may take to make its namespace and say so."""


class NoNamespace(OSError):
    """The holder could not make the namespace; the message says why, in the system's words."""


@contextlib.contextmanager
def holder() -> Iterator[list[str]]:
    """A holder process while active: the namespace files a task joins, in order. NoNamespace
    when it cannot be made here. The namespace goes with the holder on the way out."""
    env = {**os.environ, "PYTHONPATH": harness_path(os.environ)}
    pipe = subprocess.PIPE
    proc = start_child([sys.executable, "-m", HOLDER_MODULE, "hold"], env, pipe, pipe, pipe)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline() if select.select([proc.stdout], [], [], READY_TIMEOUT_S)[0] else b""
        if not line.startswith(b'{"ready"'):
            proc.kill()
            why = proc.stderr.read().decode(errors="replace").strip().splitlines()
            raise NoNamespace(
                why[-1] if why else f"the namespace holder said nothing in {READY_TIMEOUT_S:g} s"
            )
        yield list(json.loads(line)["join"])
    finally:
        proc.stdin.close()
        try:
            proc.wait(READY_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@contextlib.contextmanager
def namespace(platform: Platform) -> Iterator[dict[str, str]]:
    """The variables that put one local cell's tasks in a namespace of their own where the
    platform's port scope isolates (none otherwise); NoNamespace when it cannot be made."""
    if not platform.port_scope.isolated:
        yield {}
        return
    with holder() as paths:
        yield {NETNS_ENV: join_value(paths)}


@dataclass(frozen=True)
class Isolation:
    """Whether this machine gives a local cluster a network namespace of its own; ``detail``:
    which kind, or why not (the system's words)."""

    works: bool
    detail: str


@functools.cache
def check() -> Isolation:
    """Try once per process: make a namespace and let it go."""
    try:
        with holder() as paths:
            kind = "an unprivileged user namespace with it" if len(paths) > 1 else "a plain one, as root"
            return Isolation(True, f"tried here: {kind}")
    except (NoNamespace, OSError) as e:
        return Isolation(False, str(e))
