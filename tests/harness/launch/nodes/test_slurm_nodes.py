"""``--cluster slurm`` across two nodes of ``tools/slurm-nodes.sh`` (slow): each node a network and UTS
namespace on a bridge, pinned to its own cores, with its own slurmd. Skipped with the reason where
this machine lacks root, network namespaces or Debian's slurm-wlm and munge.

The module brings the cluster up (links unshaped) unless it is up already, and takes it down again
if it brought it up. What each test shows:

- a MultiWorkerMirrored and a parameter-server job step across the nodes exit 0, and their rows
  say 2 nodes, each task's host and the measured link; TensorFlow's servers listen only inside the
  nodes' namespaces (none of their sockets is in this machine's own);
- a node lost mid-run (its task and its slurmd killed): the running cell becomes a failed row naming
  the node within 30 s, the cells not started become rows that say why, the chief exits 1, nothing
  is left running; then, the node back, ``--resume`` measures only what is missing;
- a node cut off while its task starts (before it joins the run lease): the first cell becomes a
  failed row naming the node within 30 s of Slurm reporting the step running, before Slurm's own
  node failure cancels the step; once the link is back nothing of the run is left, and ``--resume``
  measures every cell.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.results.store import read_cells
from tests.harness.launch.cells.test_runner import ROOT, worker_processes
from tests.harness.launch.nodes.test_slurm import FAST
from tests.support import listeners

SCRIPT = ROOT / "tools" / "slurm-nodes.sh"
STATE = Path("/run/tfsb-nodes")
NODES = ("node1", "node2")


def _why_not() -> str | None:
    """Why this machine cannot make the cluster (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, a bridge, Slurm's daemons)"
    missing = [d for d in ("slurmctld", "slurmd", "munged", "srun") if shutil.which(d) is None]
    if missing:
        return f"Debian's slurm-wlm and munge are not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    if (os.cpu_count() or 1) < 2:
        return "needs 2 cores: each node gets cores of its own"
    return None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.process,
    pytest.mark.skipif(_why_not() is not None, reason=str(_why_not())),
]


def _script(*args: str) -> str:
    proc = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[None]:
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip("this machine gives no network namespace (unshare --net fails)")
    was_up = STATE.is_dir()
    _script("--nodes", "2", "--link-gbps", "none")
    yield
    if not was_up:
        _script("--down")
        assert not Path("/run/netns/node1").exists() and not STATE.exists()


def _srun(tmp_path: Path, tasks: int, *args: str, fast: bool = True) -> subprocess.Popen[str]:
    """One job step of ``tasks`` tasks on both nodes, each running ``harness run --cluster slurm``
    (``fast``: with the short windows of :data:`FAST`; flags given after it win)."""
    cmd = ["srun", "-N2", f"-n{tasks}", "--overcommit", "--wait=120", "--label", sys.executable]
    cmd += ["-m", "harness", "run", "--cluster", "slurm", "--results", str(tmp_path / "r")]
    cmd += [*(FAST if fast else []), *args]
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )


def _node_pids(node: str) -> set[int]:
    out = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def _listening(proc: subprocess.Popen[str]) -> tuple[list[str], set[str]]:
    """Until ``proc`` ends, every 0.1 s: the sockets the nodes' processes listen on as this
    machine's own namespace lists them, and the nodes whose namespace held a listener of theirs."""
    host: set[str] = set()
    inside: set[str] = set()
    while proc.poll() is None:
        for node in NODES:
            pids = _node_pids(node)
            host |= {f"{pid} {s.text}" for pid, found in listeners.in_host(pids).items() for s in found}
            if any(listeners.in_own(pids).values()):
                inside.add(node)
        time.sleep(0.1)
    return sorted(host), inside


def _harness_left() -> list[str]:
    """Harness processes still in either node (slurmstepd and slurmd are Slurm's own)."""
    left = []
    for node in NODES:
        for pid in _node_pids(node):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "harness" in cmd:
                left.append(f"{node}: {cmd}")
    return left


@pytest.mark.usefixtures("two_nodes")
@pytest.mark.parametrize(
    "tasks, args, hosts, placement",
    [
        (2, ["--strategy", "multi_worker_mirrored"], 2, "worker 0@node1, worker 1@node2"),
        (3, ["--ps", "1"], 1, "chief 0@node1, worker 0@node2, ps 0@node1"),
    ],
    ids=["multi_worker_mirrored", "parameter_server"],
)
def test_two_nodes_rows_say_where_they_ran(
    tmp_path: Path, tasks: int, args: list[str], hosts: int, placement: str
) -> None:
    proc = _srun(tmp_path, tasks, "--model", "dense", "--batch", "32", "--processes", "2", *args)
    host, inside = _listening(proc)
    out = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 0, out[-3000:]
    assert host == []  # no socket of the nodes' processes in this machine's namespace
    assert inside == set(NODES)  # TensorFlow's servers listened, inside each node
    (row,) = read_cells(tmp_path / "r").itertuples()
    assert row.status == "ok" and row.examples_per_sec > 0
    assert (row.nodes, row.hosts, row.placement) == (2, hosts, placement)
    assert row.link_gbps > 0.1
    assert "cluster: 2 nodes (" in out and "on 2 nodes" in out
    assert _harness_left() == [] and worker_processes(str(tmp_path)) == []


def _node2_task(deadline_s: float = 300) -> int | None:
    """The pid of node2's ``harness run`` task, once its worker runs a cell (None: never)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for pid in _node_pids("node2"):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if "-m harness.worker /" in cmd:  # a cell's worker (not the resolver's harness.worker.slurm)
                    return int(Path(f"/proc/{pid}/stat").read_text().split()[3])  # its parent: the task
            except OSError:
                continue
        time.sleep(0.2)
    return None


@pytest.mark.usefixtures("two_nodes")
def test_a_node_cut_off_the_network_fails_its_cell_within_30_s(tmp_path: Path) -> None:
    """node2's link taken down (no process dies, no FIN ever arrives): the chief's keepalive and
    user timeout notice within 15 s; the cell's row names node2 within 30 s; the chief exits 1."""
    proc = _srun(tmp_path, 2, "--strategy", "multi_worker_mirrored", "--model", "dense", "--repeats", "20")
    assert _node2_task() is not None, "node2 never ran a cell"
    cut_at = time.time()
    subprocess.run(["ip", "link", "set", "vnode2", "down"], check=True)
    try:
        out, _ = proc.communicate(timeout=120)
        ended_s = time.time() - cut_at
    finally:
        subprocess.run(["ip", "link", "set", "vnode2", "up"], check=True)
        _script("--nodes", "2")  # node2 back (Slurm marked it down), links as they were
    assert "0: error: worker 1 on node2 was lost at" in out, out[-3000:]
    assert "node1: task 0: Exited with exit code 1" in out, out[-3000:]  # the chief's own exit
    assert ended_s < 120  # srun itself waits until Slurm declares node2 failed (SlurmdTimeout 30 s)
    (row,) = read_cells(tmp_path / "r").itertuples()
    assert row.status == "failed" and row.reason.startswith("worker 1 on node2 was lost at")
    assert pd.Timestamp(row.timestamp).timestamp() - cut_at < 30  # the row, within 30 s of the cut
    time.sleep(20)  # node2's task loses the chief too (its own keepalive), and ends
    assert _harness_left() == [] and worker_processes(str(tmp_path)) == []


@pytest.mark.usefixtures("two_nodes")
def test_a_node_lost_mid_run_then_the_run_resumed(tmp_path: Path) -> None:
    """node2's task and slurmd are killed once its first cell runs: the chief's failed row names
    node2 within 30 s, the cells not started say why, exit 1, nothing left; then node2 comes back
    (the script starts its slurmd again) and ``--resume`` measures only what is missing."""
    cells = [
        "--strategy",
        "multi_worker_mirrored",
        "--model",
        "dense",
        "--batch",
        "16,32,64",
        "--processes",
        "1",
    ]
    proc = _srun(tmp_path, 2, *cells)
    task = _node2_task()
    assert task is not None, "node2 never ran a cell"
    slurmd = int((STATE / "node2.pid").read_text())
    killed_at = time.time()
    os.kill(task, signal.SIGKILL)
    os.kill(slurmd, signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)
    ended_s = time.time() - killed_at
    assert "0: error: worker 1 on node2 was lost at" in out, out[-3000:]
    assert "node1: task 0: Exited with exit code 1" in out, out[-3000:]  # the chief's exit code
    assert ended_s < 30
    rows = read_cells(tmp_path / "r").set_index("cell_id")
    failed = rows[rows.status == "failed"]
    assert len(failed) == 1 and "worker 1 on node2 was lost at" in failed.reason.iloc[0]
    written = pd.Timestamp(failed.timestamp.iloc[0]).timestamp()
    assert written - killed_at < 30
    unstarted = rows[rows.status == "not measured"]
    assert len(unstarted) + len(failed) + sum(rows.status == "ok") == 3
    assert all(r.startswith("not started: worker 1 on node2 was lost") for r in unstarted.reason)
    time.sleep(2)
    assert _harness_left() == [] and worker_processes(str(tmp_path)) == []

    _script("--nodes", "2")  # node2's slurmd again; the node resumed
    run_id = str(rows.run_id.iloc[0])
    again = _srun(tmp_path, 2, "--resume", run_id, fast=False)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out[-3000:]
    ok_before = sum(rows.status == "ok")
    assert f"{ok_before} processes kept from its journal" in out
    resumed = read_cells(tmp_path / "r")
    assert len(resumed) == 3 and set(resumed.status) == {"ok"} and set(resumed.run_id) == {run_id}
    assert set(resumed.nodes) == {2}


def _node2_harness(deadline_s: float = 120) -> float | None:
    """When (Unix s) node2's ``harness run`` task appeared (None: never)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for pid in _node_pids("node2"):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "-m harness run" in cmd:
                return time.time()
        time.sleep(0.05)
    return None


@pytest.mark.usefixtures("two_nodes")
def test_a_node_cut_off_before_its_task_joins_fails_a_row_before_slurm_kills_the_chief(
    tmp_path: Path,
) -> None:
    """node2's link taken down as its task starts (before it joins: its task first resolves the
    cluster, importing TensorFlow): the chief no longer waits 300 s for it, but 30 s from Slurm's
    report that the step runs, none once Slurm reports node2 down, and when Slurm cancels the step
    for node2's failure (SIGTERM) it names the task still missing; either way the first cell is a
    failed row naming node2, the other is not measured, and the chief exits 1 before Slurm's SIGKILL;
    node2's task ends once its link is back; ``--resume`` measures both cells."""
    cells = [
        "--strategy",
        "multi_worker_mirrored",
        "--model",
        "dense",
        "--batch",
        "16,32",
        "--processes",
        "1",
    ]
    proc = _srun(tmp_path, 2, *cells)
    seen_at = _node2_harness()
    assert seen_at is not None, "node2 never started its task"
    subprocess.run(["ip", "link", "set", "vnode2", "down"], check=True)
    cut_at = time.time()
    chief_at = None
    try:
        out = ""
        for line in proc.stdout or ():
            out += line
            if line.startswith("0: error:"):  # the chief's own end
                chief_at = time.time()
                break
        rest, _ = proc.communicate(timeout=240)
        out += rest
        srun_s = time.time() - cut_at
    finally:
        subprocess.run(["ip", "link", "set", "vnode2", "up"], check=True)
    rows = read_cells(tmp_path / "r").set_index("cell_id")
    failed = rows[rows.status == "failed"]
    assert len(failed) == 1, out[-3000:]
    reason = failed.reason.iloc[0]
    assert reason.startswith("worker 1 on node2 was lost at") and "joined the chief's run lease" in reason, (
        reason
    )
    unstarted = rows[rows.status == "not measured"]
    assert len(unstarted) == 1 and unstarted.reason.iloc[0].startswith("not started: worker 1 on node2"), out
    written_s = pd.Timestamp(failed.timestamp.iloc[0]).timestamp() - cut_at
    print(
        f"\ncut {cut_at - seen_at:.2f} s after node2's task appeared; row {written_s:.1f} s after the cut; chief's "
        f"error at {(chief_at or 0) - cut_at:.1f} s; srun ended {srun_s:.1f} s, exit {proc.returncode}\n{reason}\n"
        + "\n".join(out.splitlines()[-8:])
    )
    assert chief_at is not None and "node1: task 0: Killed" not in out, out[-3000:]
    deadline = time.monotonic() + 90  # node2's task sees its step over once it reaches slurmctld again
    while _harness_left() and time.monotonic() < deadline:
        time.sleep(1)
    left_s = time.time() - cut_at
    assert _harness_left() == [] and worker_processes(str(tmp_path)) == []
    print(f"nothing of the run left {left_s:.0f} s after the cut")

    _script("--nodes", "2")  # node2 back (Slurm marked it down)
    again = _srun(tmp_path, 2, "--resume", str(rows.run_id.iloc[0]), fast=False)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0 and "0 processes kept from its journal" in out, out[-3000:]
    assert set(read_cells(tmp_path / "r").status) == {"ok"}


def _ended(pid: int, deadline_s: float = 120) -> float | None:
    """When (Unix s) process ``pid`` ended, polled every 0.05 s (None: still running)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return time.time()
        time.sleep(0.05)
    return None


def _cell_worker(node: str, deadline_s: float = 300) -> int | None:
    """The pid of ``node``'s cell worker (``python -m harness.worker /...``) once it runs (None: never)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for pid in _node_pids(node):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "-m harness.worker /" in cmd:
                return pid
        time.sleep(0.1)
    return None


LONG = ("--repeats", "40", "--window-s", "1", "--model", "dense", "--processes", "1")
"""A cell that runs long enough for a fault injected seconds into it."""


@pytest.mark.usefixtures("two_nodes")
@pytest.mark.parametrize(
    "tasks, args, task, node, said",
    [
        (
            2,
            ["--strategy", "multi_worker_mirrored", "--communication", "ring"],
            1,
            "node2",
            "worker 1 on node2: its part failed:",
        ),
        (3, ["--ps", "1"], 2, "node1", "ps 0 on node1 was lost at"),
    ],
    ids=["a_peers_own_cell", "a_parameter_servers_process"],
)
def test_a_task_whose_process_dies_fails_the_row_at_once_with_its_reason(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tasks: int,
    args: list[str],
    task: int,
    node: str,
    said: str,
) -> None:
    """Task ``task``'s cell process is killed 3 s after it joined (its ``harness run`` lives on and
    tells the chief why over the run lease): the chief's row names the task, its node and the
    reason within 30 s, the chief exits 1, nothing is left on either node, and ``--resume``
    measures the cell."""
    cell = f"dense/{'multi_worker_mirrored[ring]/r1w2' if tasks == 2 else 'parameter_server/r1w1p1'}"
    monkeypatch.setenv(
        "HARNESS_INJECT_FAULT", f"kill@{task}+3:{cell}/b32/acc1/ctl/spe5/float32/synthetic/weak"
    )
    proc = _srun(tmp_path, tasks, *args, *LONG)
    pid = _cell_worker(node)
    assert pid is not None, f"{node} never ran a cell"
    died_at = _ended(pid)
    out, _ = proc.communicate(timeout=300)
    assert died_at is not None, out[-3000:]
    (row,) = read_cells(tmp_path / "r").itertuples()
    assert row.status == "failed" and row.reason.startswith(said), row.reason
    assert "SIGKILL" in row.reason or "signal 9" in row.reason, row.reason
    written_s = pd.Timestamp(row.timestamp).timestamp() - died_at
    print(
        f"\nrow written {written_s:+.1f} s from the process's end; srun exit {proc.returncode}\n{row.reason}"
    )
    assert written_s < 30
    assert "node1: task 0: Exited with exit code 1" in out, out[-3000:]  # the chief's exit code
    time.sleep(2)
    assert _harness_left() == [] and worker_processes(str(tmp_path)) == []
    monkeypatch.delenv("HARNESS_INJECT_FAULT")
    shape = args[args.index("--ps") :][:2] if "--ps" in args else []  # the cluster's shape again
    again = _srun(tmp_path, tasks, "--resume", str(row.run_id), *shape, fast=False)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out[-3000:]
    assert set(read_cells(tmp_path / "r").status) == {"ok"}


def _journal_lines(folder: Path) -> int:
    """Lines of the run journal under results ``folder`` so far (its plan, then each process)."""
    return sum(p.read_text().count("\n") for p in (folder / "journal").glob("*.jsonl"))


@pytest.mark.usefixtures("two_nodes")
def test_a_full_disk_on_the_chief_ends_the_run_and_resume_measures_the_rest(tmp_path: Path) -> None:
    """The results folder a tmpfs of its own, filled once the first of three cells' process is in
    the run's journal:
    the chief's next write fails with ENOSPC; every task is told the run is over, the chief exits 1
    naming the command that resumes it, nothing is left on either node; with the space back,
    ``--resume`` measures only the cells missing."""
    results = tmp_path / "r"
    results.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(results)], check=True)
    try:
        cells = ("--strategy", "multi_worker_mirrored", "--model", "dense", "--batch", "16,32,64")
        proc = _srun(tmp_path, 2, *cells, "--processes", "1")
        deadline = time.monotonic() + 300
        while _journal_lines(results) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        subprocess.run(["dd", "if=/dev/zero", f"of={results / 'fill'}", "bs=1M"], capture_output=True)
        full_at = time.time()
        out, _ = proc.communicate(timeout=300)
        ended_s = time.time() - full_at
        print(f"\nthe disk full {full_at:.1f}; srun ended {ended_s:.1f} s later, exit {proc.returncode}")
        print("\n".join(out.splitlines()[-6:]))
        assert proc.returncode != 0 and "the disk is full" in out, out[-3000:]
        assert "--resume" in out and "node1: task 0: Exited with exit code 1" in out, out[-3000:]
        time.sleep(2)
        assert _harness_left() == [] and worker_processes(str(tmp_path)) == []
        (results / "fill").unlink()
        run_id = out.split("--resume ", 1)[1].split()[0]  # the command it printed
        again = _srun(tmp_path, 2, "--resume", run_id, fast=False)
        out, _ = again.communicate(timeout=600)
        assert again.returncode == 0, out[-3000:]
        resumed = read_cells(results)
        assert len(resumed) == 3 and set(resumed.status) == {"ok"}, resumed[["cell_id", "status"]]
    finally:
        subprocess.run(["umount", "-l", str(results)], check=False)
