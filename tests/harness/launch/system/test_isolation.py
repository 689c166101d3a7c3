"""Local clusters off the network (:mod:`harness.launch.system.isolation`): the namespace holder, the
machine's check with a failing ``unshare`` injected, and, from outside a real run, the sockets its
processes listen on: none beyond loopback in this machine's namespace, while they did listen in
their own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.contract.isolation import NO_NAMESPACE_FAULT
from harness.launch.system import isolation
from tests.harness.launch.cells.test_local_cluster import FAST, MWMS, PS
from tests.harness.launch.cells.test_runner import ROOT
from tests.support import listeners


@pytest.mark.process
def test_a_failing_unshare_makes_the_check_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_INJECT_FAULT", NO_NAMESPACE_FAULT)
    isolation.check.cache_clear()
    try:
        found = isolation.check()
    finally:
        isolation.check.cache_clear()
    assert not found.works and "Operation not permitted" in found.detail
    with pytest.raises(isolation.NoNamespace, match="not permitted"), isolation.holder():
        pass


def _needs_namespaces() -> None:
    if not isolation.check().works:
        pytest.skip(f"this machine gives no network namespace: {isolation.check().detail}")


@pytest.mark.process
def test_the_holder_gives_a_namespace_of_its_own_with_loopback_up() -> None:
    _needs_namespaces()
    with isolation.holder() as paths:
        pid = int(paths[-1].split("/")[2])
        assert os.readlink(paths[-1]) != os.readlink("/proc/self/ns/net")
        with open(f"/proc/{pid}/net/dev") as f:  # only lo in it
            assert [line.split(":")[0].strip() for line in f.readlines()[2:]] == ["lo"]
        with open(f"/proc/{pid}/net/if_inet6") as f:  # present once lo is up (::1)
            text = f.read()
        assert "lo" in text or text == ""  # kernels without IPv6 list nothing
    assert not os.path.exists(f"/proc/{pid}")


def _listening_during(argv: list[str], env: dict[str, str]) -> tuple[int, list[str], list[str], set[int]]:
    """Run the harness, sampling its process tree every 0.1 s: (exit code, the sockets seen in this
    machine's namespace, those seen in the processes' own other namespaces, the pids behind them)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *argv], cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE
    )
    host_ns = os.readlink("/proc/self/ns/net")
    host: set[str] = set()
    own: set[str] = set()
    listened: set[int] = set()
    while proc.poll() is None:
        pids = listeners.descendants(proc.pid) | {proc.pid}
        for pid, sockets in listeners.in_host(pids).items():
            host |= {f"{pid} {s.text}" for s in sockets if not s.loopback}
        for pid, sockets in listeners.in_own(pids).items():
            try:
                elsewhere = os.readlink(f"/proc/{pid}/ns/net") != host_ns
            except OSError:
                continue
            if sockets and elsewhere:
                own |= {f"{pid} {s.text}" for s in sockets}
                listened.add(pid)
        time.sleep(0.1)
    assert proc.stdout is not None
    proc.stdout.close()
    return proc.returncode, sorted(host), sorted(own), listened


@pytest.mark.process
@pytest.mark.parametrize(
    "fork",
    # about 20 s each on 2 cores (2026-11-27): the default tier keeps the forked workers, the runs' way
    [True, pytest.param(False, marks=pytest.mark.slow)],
    ids=["forked", "fresh"],
)
def test_a_local_cluster_listens_on_no_interface_of_this_machine(tmp_path: Path, fork: bool) -> None:
    """Both join paths (a forked worker, a fresh interpreter); multi-worker and parameter server."""
    _needs_namespaces()
    args = [
        "run",
        "--results",
        str(tmp_path / "r"),
        *FAST,
        "--strategy",
        "multi_worker_mirrored,parameter_server",
    ]
    args += ["--communication", "ring", "--workers", "2", *([] if fork else ["--no-fork"])]
    code, host, own, listened = _listening_during(args, {"TMPDIR": str(tmp_path)})
    assert code == 0
    assert host == []  # nothing of the run beyond loopback in this machine's namespace
    # they did listen: both multi-worker workers, the parameter server's 2 workers and ps at least
    assert len(listened) >= 5 and len(own) >= 5, own
    import pandas as pd

    cells = pd.read_parquet(tmp_path / "r" / "cells").set_index("cell_id")
    assert cells.loc[MWMS].status == "ok" and cells.loc[PS].status == "ok"


@pytest.mark.process
def test_where_namespaces_are_forbidden_the_cell_is_a_row_naming_the_flag(tmp_path: Path) -> None:
    from tests.harness.launch.cells.test_runner import harness

    env = {"TMPDIR": str(tmp_path), "HARNESS_INJECT_FAULT": NO_NAMESPACE_FAULT}
    args = ["run", "--results", str(tmp_path / "r"), *FAST, "--strategy", "multi_worker_mirrored"]
    proc = harness(*args, "--communication", "ring", "--workers", "2", env=env)
    warning = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "--open-ports" in warning[0] and "every interface" in warning[0]
    import pandas as pd

    row = pd.read_parquet(tmp_path / "r" / "cells").set_index("cell_id").loc[MWMS]
    assert row.status == "unsupported" and "--open-ports" in row.reason, row.reason
    assert pd.isna(row.examples_per_sec)
    dry = harness(*args, "--communication", "ring", "--workers", "2", "--open-ports", "--dry-run", env=env)
    (line,) = [x for x in dry.stderr.splitlines() if x.startswith("warning:")]
    assert "--open-ports runs them anyway" in line and "can run code" in line


@pytest.mark.process
def test_the_listing_sees_open_ports_where_the_user_accepts_them(tmp_path: Path) -> None:
    """The control: with namespaces forbidden and --open-ports, the same listing finds the workers'
    servers on every interface, so an empty listing above is no accident of the method."""
    env = {"TMPDIR": str(tmp_path), "HARNESS_INJECT_FAULT": NO_NAMESPACE_FAULT}
    args = ["run", "--results", str(tmp_path / "r"), *FAST, "--strategy", "multi_worker_mirrored"]
    code, host, own, _ = _listening_during(
        [*args, "--communication", "ring", "--workers", "2", "--open-ports"], env
    )
    assert code == 0 and own == []
    assert len({entry.split()[0] for entry in host}) >= 2, host  # both workers, on every interface
