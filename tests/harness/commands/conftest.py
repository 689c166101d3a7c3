"""Commands run in this process by the unit tier: the machine's namespace check
(:func:`harness.launch.system.isolation.check`, which starts a holder process) answers "works" there, as
if this machine allowed namespaces; tests marked ``process`` get the real check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.launch.system import isolation


@pytest.fixture(autouse=True)
def _namespace_check_without_a_process(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("process") is not None:
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(isolation, "check", lambda: isolation.Isolation(True, "the unit tier's stand-in"))
        yield
