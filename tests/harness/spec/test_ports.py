"""Where a local cluster's servers can be reached from (:mod:`harness.spec.ports`) and the rule
that keeps a cell with servers on every interface from running without ``--open-ports``."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.spec.cell import Cell
from harness.spec.ports import LOOPBACK, OPEN, OPEN_PORTS_FLAG, PORT_SCOPES, REFUSED, port_scope
from harness.spec.protocol import Platform
from harness.spec.rules import unsupported_reason


def test_isolation_decides_and_the_flag_decides_only_without_it() -> None:
    assert port_scope(True, False) is LOOPBACK and port_scope(True, True) is LOOPBACK
    assert port_scope(False, True) is OPEN and port_scope(False, False) is REFUSED
    assert [s.name for s in PORT_SCOPES.values() if s.runs] == ["loopback", "open"]
    assert [s.name for s in PORT_SCOPES.values() if s.isolated] == ["loopback"]
    for scope in (OPEN, REFUSED):  # the words name the risk and the flag
        assert "every interface" in scope.words and OPEN_PORTS_FLAG in scope.words


def test_a_platform_takes_only_a_known_scope() -> None:
    assert Platform().port_scope is LOOPBACK
    with pytest.raises(HarnessError, match=r"port scope.*loopback, open, refused"):
        Platform(ports="everywhere")


MWMS = Cell(strategy="multi_worker_mirrored", workers=2)
PS = Cell(strategy="parameter_server", workers=1, ps=1)


@pytest.mark.parametrize("cell", [MWMS, PS], ids=["multi_worker", "parameter_server"])
def test_a_local_cluster_is_not_run_where_its_ports_would_be_open_unasked(cell: Cell) -> None:
    reason = unsupported_reason(cell, Platform(ports="refused"))
    assert reason is not None and "every interface" in reason and OPEN_PORTS_FLAG in reason
    assert unsupported_reason(cell, Platform(ports="open")) is None
    assert unsupported_reason(cell, Platform(ports="loopback")) is None
    # a real cluster's task is one process here: the scheduler's network is the user's to trust
    assert unsupported_reason(cell, Platform(ports="refused", shared_host=False)) is None


def test_one_process_starts_no_server_and_always_runs() -> None:
    for cell in (Cell(strategy="mirrored", replicas=2), Cell(strategy="multi_worker_mirrored", workers=1)):
        assert unsupported_reason(cell, Platform(ports="refused")) is None
