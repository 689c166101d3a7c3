"""Where a local cluster's TensorFlow servers can be reached from: one :class:`PortScope` per
case, chosen once per run from what the machine allows and ``--open-ports``. Pure data. Why
(TensorFlow's servers listen on every interface without authentication):
docs/explanation/multi-worker.md, "Ports and the network"."""

from __future__ import annotations

from dataclasses import dataclass

OPEN_PORTS_FLAG = "--open-ports"


@dataclass(frozen=True)
class PortScope:
    """``name``: the value :attr:`harness.spec.protocol.Platform.ports` holds; ``isolated``: each
    local cluster gets a network namespace of its own; ``runs``: local clusters run at all;
    ``words``: what it means, in one sentence."""

    name: str
    isolated: bool
    runs: bool
    words: str


LOOPBACK = PortScope(
    "loopback",
    True,
    True,
    "each local multi-worker or parameter-server configuration runs in a network namespace of its "
    "own with only loopback: its TensorFlow servers cannot be reached from the network",
)
OPEN = PortScope(
    "open",
    False,
    True,
    f"this machine cannot give local clusters a network namespace of their own, and {OPEN_PORTS_FLAG} "
    "runs them anyway: while they run, their TensorFlow servers listen on every interface without "
    "authentication, and whoever reaches those ports can run code in them",
)
REFUSED = PortScope(
    "refused",
    False,
    False,
    "this machine cannot give local clusters a network namespace of their own, so local multi-worker "
    "and parameter-server configurations are not run: their TensorFlow servers would listen on every "
    f"interface without authentication ({OPEN_PORTS_FLAG} runs them anyway)",
)

PORT_SCOPES: dict[str, PortScope] = {s.name: s for s in (LOOPBACK, OPEN, REFUSED)}


def port_scope(isolation_works: bool, open_ports: bool) -> PortScope:
    """The scope of a run: loopback where isolation works, else what ``--open-ports`` decides."""
    if isolation_works:
        return LOOPBACK
    return OPEN if open_ports else REFUSED
