"""The chief's run lease: sockets on 127.0.0.1, in threads (no TensorFlow)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from harness.launch.cells.cluster import ClusterConfig
from harness.launch.cells.local_cluster import free_ports
from harness.launch.nodes import lease
from harness.launch.nodes.lease import (
    LEASE_CONNECT_TIMEOUT_S,
    LEASE_RETRY_S,
    CellFailed,
    CellOrder,
    ChiefEnd,
    ChiefLink,
    Exit,
    Finished,
    Join,
    RunLease,
    Welcome,
    cluster_digest,
    decode,
    encode,
    lease_address,
    task_names,
)
from harness.launch.nodes.scheduler import Seen
from tests.harness.launch.nodes.test_real_cluster import MWMS, PS, _config


def test_lease_address_is_the_chief_host_above_its_ports() -> None:
    assert lease_address(_config(PS, "worker", 1)) == ("a", 2224)  # chief a:2222 and ps a:2223
    assert lease_address(_config(MWMS, "worker", 2)) == ("a", 2223)  # worker 0 is the chief
    slurm = {"chief": ["n1:8888"], "ps": ["n1:8889"], "worker": ["n1:8890", "n2:8888"]}
    assert lease_address(_config(slurm, "ps", 0)) == ("n1", 8891)


def test_task_names_and_digest() -> None:
    assert task_names(_config(PS, "chief", 0)) == ["worker 0", "worker 1", "ps 0"]
    assert task_names(_config(MWMS, "worker", 0)) == ["worker 1", "worker 2"]
    assert cluster_digest(_config(PS, "chief", 0)) == cluster_digest(_config(PS, "ps", 0))
    assert cluster_digest(_config(PS, "chief", 0)) != cluster_digest(_config(MWMS, "worker", 0))


def test_lease_messages_are_one_json_object_per_line() -> None:
    assert encode(Finished(0)) == b'{"kind":"finished","code":0}\n'
    cell = CellOrder("p0-00001", {"model": "a  b", "x": [1, 2]})
    for message in (cell, Join("ps 1", "ab12"), Welcome({}), CellFailed("p0-1", "x\ny"), Exit("oom")):
        assert decode(encode(message)) == message
    bad = (b"", b'{"kind":"finished","code":0}', b"finished 0\n", b'{"kind":"nope"}\n', b"[1]\n")
    bad += (
        b'{"kind":"finished"}\n',
        b'{"kind":"finished","code":"0"}\n',
        b'{"kind":"join","task":1,"cluster":"a"}\n',
    )
    for line in bad:
        with pytest.raises(ValueError, match="lease"):
            decode(line)


def wait_for_chief(
    config: ClusterConfig, connect_timeout_s: float = LEASE_CONNECT_TIMEOUT_S, retry_s: float = LEASE_RETRY_S
) -> ChiefEnd:
    """A task that only waits for the end of the chief's run: connect, then block until the run is
    over, ignoring cell orders (as a parameter-server server does)."""
    link = ChiefLink(config)
    failed = link.connect(connect_timeout_s, retry_s)
    if failed is not None:
        return failed
    while True:
        order = link.next()
        if isinstance(order, ChiefEnd):
            return order


def _local_ps(n_ps: int = 1) -> dict[str, list[str]]:
    addresses = [f"127.0.0.1:{p}" for p in free_ports(3 + n_ps)]
    return {"chief": addresses[:1], "worker": addresses[1:3], "ps": addresses[3:]}


def _watch(
    cluster: dict[str, list[str]],
    kind: str,
    index: int,
    ends: dict[str, ChiefEnd],
    connect_timeout_s: float = 20,
) -> threading.Thread:
    def run() -> None:
        ends[f"{kind} {index}"] = wait_for_chief(_config(cluster, kind, index), connect_timeout_s, 0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_run_lease_tells_every_server_that_the_run_finished() -> None:
    cluster = _local_ps()
    ends: dict[str, ChiefEnd] = {}
    early = [_watch(cluster, "worker", 0, ends), _watch(cluster, "ps", 0, ends)]  # before the chief
    time.sleep(0.5)
    with RunLease(_config(cluster, "chief", 0), linger_s=20) as lease:
        late = _watch(cluster, "worker", 1, ends)  # during the run
        t0 = time.monotonic()
        assert lease.finish(3) == []  # waits for worker 1 if it has not connected yet
        assert time.monotonic() - t0 < 10
    for t in [*early, late]:
        t.join(10)
    assert ends == {
        name: ChiefEnd(True, 3, "the chief's run finished with exit code 3")
        for name in ("worker 0", "worker 1", "ps 0")
    }


def test_run_lease_names_tasks_that_never_connected_after_its_linger() -> None:
    cluster = _local_ps()
    ends: dict[str, ChiefEnd] = {}
    with RunLease(_config(cluster, "chief", 0), linger_s=0.5) as lease:
        _watch(cluster, "ps", 0, ends).join(0.01)
        time.sleep(0.5)
        assert lease.finish(0) == ["worker 0", "worker 1"]


def test_leaving_the_lease_without_finish_finishes_with_1() -> None:
    cluster = _local_ps()
    ends: dict[str, ChiefEnd] = {}

    def run_breaks() -> None:
        with RunLease(_config(cluster, "chief", 0), linger_s=0):
            threads.append(_watch(cluster, "ps", 0, ends))
            time.sleep(0.5)
            raise RuntimeError("the chief's run broke")

    threads: list[threading.Thread] = []
    with pytest.raises(RuntimeError, match="the chief's run broke"):
        run_breaks()
    thread = threads[0]
    thread.join(10)
    assert ends["ps 0"].finished and ends["ps 0"].code == 1


def test_a_server_notices_a_lost_chief_and_an_absent_one() -> None:
    cluster = _local_ps()
    host, port = lease_address(_config(cluster, "chief", 0))
    with socket.create_server((host, port)) as fake_chief:  # welcomes, then dies without a word
        ends: dict[str, ChiefEnd] = {}
        thread = _watch(cluster, "ps", 0, ends)
        conn, _ = fake_chief.accept()
        reader = conn.makefile("rb")
        assert decode(reader.readline()) == Join("ps 0", cluster_digest(_config(cluster, "chief", 0)))
        conn.sendall(encode(Welcome({})))
        reader.close()
        conn.close()
        thread.join(10)
    assert not ends["ps 0"].finished and ends["ps 0"].code is None
    assert "lost the chief's run lease" in ends["ps 0"].detail
    t0 = time.monotonic()
    absent = wait_for_chief(_config(cluster, "ps", 0), connect_timeout_s=0.5, retry_s=0.1)
    assert not absent.finished and "no run lease" in absent.detail and "refused" in absent.detail
    assert time.monotonic() - t0 < 5


def test_a_server_ignores_another_clusters_lease_on_the_port() -> None:
    cluster = _local_ps()
    other = {**cluster, "worker": [*cluster["worker"], "10.0.0.9:2222"]}  # one more worker elsewhere
    assert lease_address(_config(other, "chief", 0)) == lease_address(_config(cluster, "chief", 0))
    with RunLease(_config(other, "chief", 0), linger_s=0):
        end = wait_for_chief(_config(cluster, "ps", 0), connect_timeout_s=1, retry_s=0.1)
    assert not end.finished and "something else answers there" in end.detail


def _joined(cluster: dict[str, list[str]], kind: str, index: int) -> ChiefLink:
    link = ChiefLink(_config(cluster, kind, index))
    assert link.connect(20, 0.1) is None
    return link


def test_the_chief_welcomes_each_task_and_orders_each_cell() -> None:
    cluster = _local_ps()
    with RunLease(_config(cluster, "chief", 0), {"cell": {"model": "dense"}}, linger_s=5) as lease:
        links = [_joined(cluster, k, i) for k, i in (("worker", 0), ("worker", 1), ("ps", 0))]
        assert lease.wait_for_tasks(timeout_s=10) is None
        assert all(link.welcome == {"cell": {"model": "dense"}} for link in links)
        lease.start_cell("p0-00000", {"model": "dense", "note": "two  spaces"})
        for link in links:
            assert link.next(5) == CellOrder("p0-00000", {"model": "dense", "note": "two  spaces"})
        assert lease.probe("worker 1", nbytes=4 << 20) > 0  # Gbit/s, acknowledged by the task
        assert lease.lost() is None
        lease.finish(0)
    for link in links:
        assert link.next(5) == ChiefEnd(True, 0, "the chief's run finished with exit code 0")
        assert link._gone is None


def test_the_chief_names_a_lost_task_and_its_host_at_once() -> None:
    cluster = _local_ps()
    with RunLease(_config(cluster, "chief", 0), linger_s=0) as lease:
        links = [_joined(cluster, k, i) for k, i in (("worker", 0), ("worker", 1), ("ps", 0))]
        assert lease.wait_for_tasks(timeout_s=10) is None
        t0 = time.monotonic()
        assert links[1]._conn is not None
        links[1]._conn.conn.shutdown(socket.SHUT_RDWR)  # its process died: the kernel closes the socket
        while lease.lost() is None and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        lost = lease.lost()
        assert lost is not None and lost.task == "worker 1" and lost.host == "127.0.0.1"
        assert "worker 1 on 127.0.0.1 was lost at" in lost.text()
        assert time.monotonic() - t0 < 2


def test_a_task_that_never_joins_is_lost_after_the_wait() -> None:
    cluster = _local_ps()
    with RunLease(_config(cluster, "chief", 0), linger_s=30) as lease:
        _joined(cluster, "ps", 0)
        lost = lease.wait_for_tasks(timeout_s=0.5)
        assert lost is not None and lost.task == "worker 0" and lost.host == "127.0.0.1"
        assert lost.why == "it never joined the chief's run lease within 0.5 s"
        t0 = time.monotonic()
        assert lease.finish(1) == []  # no linger for the tasks lost: both workers
        assert time.monotonic() - t0 < 2


def test_a_task_its_scheduler_reports_running_is_lost_30_s_after() -> None:
    cluster = _local_ps()
    reported = Seen(time.monotonic() - 30.5, "Slurm reporting its job step 7.0 running")
    with RunLease(_config(cluster, "chief", 0), linger_s=0) as lease:
        _joined(cluster, "ps", 0)
        _joined(cluster, "worker", 0)
        t0 = time.monotonic()  # a welcomed task is the chief's member a moment after its welcome
        while not {"ps 0", "worker 0"} <= set(lease._members) and time.monotonic() - t0 < 5:
            time.sleep(0.01)
        lost = lease.wait_for_tasks(lambda host: reported)
        assert time.monotonic() - t0 < 2
        assert lost is not None and lost.task == "worker 1"
        assert lost.why == (
            "it never joined the chief's run lease within 30 s of Slurm reporting its job step 7.0 running"
        )


def test_a_tasks_cell_failure_and_its_exit_reach_the_chief() -> None:
    cluster = _local_ps()
    with RunLease(_config(cluster, "chief", 0), linger_s=0) as lease:
        links = {k: _joined(cluster, *k) for k in (("worker", 0), ("worker", 1), ("ps", 0))}
        assert lease.wait_for_tasks(timeout_s=10) is None
        links["worker", 1].tell(CellFailed("p0-00003", "ResourceExhaustedError: OOM"))
        links["ps", 0].tell(Exit("its server process exited with exit code 1"))
        t0 = time.monotonic()
        while (lease.lost() is None or lease.failed("p0-00003") is None) and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        assert (
            lease.failed("p0-00003") == "worker 1 on 127.0.0.1: its part failed: ResourceExhaustedError: OOM"
        )
        assert lease.failed("p0-00004") is None
        lost = lease.lost()
        assert lost is not None and lost.task == "ps 0"
        assert lost.why == "it exited: its server process exited with exit code 1"


def test_a_task_sees_its_chief_gone_while_a_cell_runs() -> None:
    cluster = _local_ps()
    lease = RunLease(_config(cluster, "chief", 0), linger_s=0)
    link = _joined(cluster, "worker", 0)
    lease._listener.close()
    with lease._lock:
        members = list(lease._members.values())
    for member in members:
        member.conn.shutdown(socket.SHUT_RDWR)
    end = link.next(5)
    assert isinstance(end, ChiefEnd) and not end.finished
    assert link._gone is not None and "the chief died or its host is gone" in str(link._gone)


def test_a_second_connection_in_a_tasks_name_counts_as_the_first_lost() -> None:
    cluster = _local_ps()
    with RunLease(_config(cluster, "chief", 0), linger_s=0) as lease:
        first = _joined(cluster, "ps", 0)
        _joined(cluster, "ps", 0)
        deadline = time.monotonic() + 5  # the chief marks the first lost as it admits the second
        while (lost := lease.lost()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lost is not None and lost.task == "ps 0" and "connected again" in lost.why, lost
        end = first.next(5)  # the first connection is closed for good
        assert isinstance(end, ChiefEnd) and not end.finished


def test_an_interrupted_wait_loses_every_task_not_joined() -> None:
    import _thread

    cluster = _local_ps()
    with RunLease(_config(cluster, "chief", 0), linger_s=30) as lease:
        _joined(cluster, "ps", 0)
        threading.Timer(0.5, _thread.interrupt_main).start()  # what SIGTERM does (interrupt_on_sigterm)
        lost = lease.wait_for_tasks()
        assert lost is not None and lost.task == "worker 0"
        assert lost.why.startswith("it had not joined the chief's run lease when the chief was stopped")
        assert lease.finish(1) == []  # no linger: both workers are lost


def test_a_port_held_for_a_moment_by_a_local_socket_is_listened_on_once_free() -> None:
    held = socket.socket()
    held.bind(("127.0.0.1", 0))  # as a connecting client's ephemeral port, or TCP joined to itself
    port = held.getsockname()[1]
    threading.Timer(0.3, held.close).start()
    with lease._listen(port) as listener:
        assert listener.getsockname()[1] == port
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    with pytest.raises(OSError):  # held for longer than the retry: the bind's own error
        lease._listen(other.getsockname()[1], retry_s=0.2)
    other.close()
