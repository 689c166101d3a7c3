"""The only module that starts processes or signals other processes, and that sets environment
variables for them.

:func:`run_worker` starts one worker process for one cell and yields its events. Deadlines:
``startup_timeout_s`` until the cell starts, ``protocol.cell_timeout_s`` for the cell. A worker that
dies or passes a deadline is stopped (SIGTERM to its process group, SIGKILL after ``KILL_GRACE_S``)
and the cell becomes a ``failed`` event with the phase, the cause and the tail of the worker's log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster import ClusterConfig
from harness.spec import PARAMETER_SERVER, Cell, Platform, Protocol, SpecError
from harness.worker import Job

KILL_GRACE_S = 5.0
POLL_S = 0.1
STDERR_TAIL_LINES = 12
WORKER_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
FAULT_ENV = "HARNESS_INJECT_FAULT"
"""Test hook, passed to workers: ``kill:<cell_id>`` or ``hang:<cell_id>`` (at the cell's start);
``kill@N:`` / ``hang@N:<cell_id>`` (task N of a multi-worker cell, once every task has joined);
``absent@N:<cell_id>`` (task N is never started)."""


# ------------------------------------------------------------------------------------------------
# Facts from the environment, without TensorFlow
# ------------------------------------------------------------------------------------------------


def count_nvidia_gpus() -> int:
    """GPUs that ``nvidia-smi -L`` lists (0 without the tool or a driver)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    n = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    if visible is not None:
        n = min(n, len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"]))
    return n


DEVICE_CHOICES = ("auto", "cpu", "gpu")


def detect_platform(device: str = "auto", cpu_devices: int = 2) -> Platform:
    """The Platform to plan for: GPUs if ``nvidia-smi`` sees any (or ``device="gpu"``), else CPU
    with ``cpu_devices`` logical devices."""
    if device not in DEVICE_CHOICES:
        raise SpecError(f"Received --device={device!r}; expected one of: {', '.join(DEVICE_CHOICES)}.")
    if cpu_devices < 1:
        raise SpecError(f"Received --cpu-devices={cpu_devices!r}; expected an integer of at least 1.")
    gpus = count_nvidia_gpus() if device != "cpu" else 0
    if device == "gpu" and gpus == 0:
        raise SpecError("Received --device=gpu, but nvidia-smi lists no GPU; expected --device cpu or auto.")
    return Platform("gpu" if gpus else "cpu", gpus, cpu_devices)


def git_sha() -> str:
    """Short commit of the suite's checkout, or "" outside git."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def injected_fault() -> str | None:
    return os.environ.get(FAULT_ENV) or None


# ------------------------------------------------------------------------------------------------
# Worker processes
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerOptions:
    """What a worker needs besides its cells. ``startup_timeout_s``: seconds to import TensorFlow and
    set up devices."""

    protocol: Protocol
    platform: Platform
    log_dir: Path
    mnist_path: str | None = None
    startup_timeout_s: float = 180.0
    verify_updates: int | None = None
    weights_dir: str | None = None


def _signal_name(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def stop(proc: subprocess.Popen[bytes], grace_s: float = KILL_GRACE_S) -> str:
    """SIGTERM the worker's process group, SIGKILL it after ``grace_s``; returns what it took."""
    if proc.poll() is not None:
        return "already exited"
    how = "SIGTERM"
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        how = "SIGTERM, then SIGKILL"
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return how


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGKILL when the parent dies (even by SIGKILL), so a
    worker in its own session never outlives the run."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Events:
    """Reads complete JSON lines appended to a file by a worker."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, ""

    def read(self) -> list[dict[str, Any]]:
        with open(self.path) as f:
            f.seek(self.offset)
            chunk = f.read()
            self.offset = f.tell()
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        return [json.loads(line) for line in lines if line.strip()]


@dataclass(frozen=True)
class Launch:
    """How to start one process of a cell: its environment additions (TF_CONFIG, threads, device
    mask), its role (see :class:`harness.worker.Job`), its position in the cell's task list, the
    cores each worker gets, the hosts the workers span and whether the cell oversubscribes cores."""

    env: tuple[tuple[str, str], ...] = ()
    role: str = "chief"
    index: int = 0
    cores: int | None = None
    hosts: int = 1
    oversubscribed: bool | None = None


def _start(cell: Cell, options: WorkerOptions, name: str, tmp: Path, launch: Launch = Launch()
           ) -> tuple[subprocess.Popen[bytes], _Events, Path]:
    job = Job(cell, options.protocol, options.platform, options.mnist_path, injected_fault(),
              options.verify_updates, options.weights_dir, launch.index, launch.cores, launch.role,
              launch.hosts, launch.oversubscribed)
    job_path, events_path = tmp / f"job-{launch.index}.json", tmp / f"events-{launch.index}.jsonl"
    job_path.write_text(json.dumps(job.to_json()))
    events_path.touch()
    options.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = options.log_dir / f"{name}.log"
    env = {**os.environ, **WORKER_ENV, **dict(launch.env)}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.worker", str(job_path), str(events_path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True, preexec_fn=_die_with_parent)
    return proc, _Events(events_path), log_path


def run_worker(cell: Cell, options: WorkerOptions, name: str = "worker", launch: Launch = Launch(),
               joins: bool = False) -> Iterator[dict[str, Any]]:
    """Run ``cell`` in one fresh worker process; yield its events (each with the worker's ``facts``).

    Deadlines: start-up until the cell starts; with ``joins`` (one task of a cluster the scheduler
    started: ``--cluster tf_config|slurm``), the rendezvous until the worker has joined its cluster;
    then the cell. If the worker dies or passes a deadline before its record (a peer: before it
    finished), it is stopped and this yields ``{"event": "failed", "cell_id", "reason", "facts"}``
    naming the phase, the cause and the tail of its log. Always leaves no process behind.
    """
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        proc, events, log_path = _start(cell, options, name, Path(tmpdir), launch)
        facts: dict[str, Any] | None = None
        done = False
        limit = options.startup_timeout_s
        deadline = time.monotonic() + limit
        phase = "start-up (import TensorFlow, set up devices)"

        def enter(name: str, seconds: float) -> None:
            nonlocal phase, limit, deadline
            phase, limit, deadline = name, seconds, time.monotonic() + seconds

        def drain() -> Iterator[dict[str, Any]]:
            nonlocal facts, done
            for ev in events.read():
                if ev["event"] == "ready":
                    facts = ev["facts"]
                elif ev["event"] == "start":
                    enter("rendezvous (joining the cluster)", options.protocol.rendezvous_timeout_s
                          ) if joins else enter(f"cell {cell.id}", options.protocol.cell_timeout_s)
                elif ev["event"] == "joined" and joins:
                    enter(f"cell {cell.id}", options.protocol.cell_timeout_s)
                elif ev["event"] in ("record", "finished"):
                    done = True
                yield {**ev, "facts": facts}

        try:
            while proc.poll() is None and time.monotonic() <= deadline:
                yield from drain()
                time.sleep(POLL_S)
        finally:
            how = stop(proc)
        yield from drain()  # anything written just before the exit or the deadline
        if done:
            return
        if how == "already exited":
            cause = f"worker exited with {_signal_name(proc.returncode)} during {phase}"
        else:
            cause = (f"deadline passed: {phase} took over {limit:g} s; worker stopped with {how}")
        yield {"event": "failed", "cell_id": cell.id, "facts": facts,
               "reason": f"{cause}; worker log {log_path}: {_tail(log_path)}"}


# ------------------------------------------------------------------------------------------------
# Multi-worker cells on 127.0.0.1: TensorFlow's own cluster runtime (TF_CONFIG, gRPC collectives)
# ------------------------------------------------------------------------------------------------

FINISH_GRACE_S = 30.0


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (held open together while chosen)."""
    import socket

    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


@dataclass(frozen=True)
class Task:
    """One process of a multi-worker cell: its TF_CONFIG task and its part in the harness.

    ``role``: chief (runs the cell, reports the row), peer (runs the cell: a MultiWorkerMirrored
    worker other than the chief) or server (a parameter-server cell's worker or ps task: a
    ``tf.distribute.Server`` the chief's ClusterCoordinator drives)."""

    type: str
    index: int
    role: str

    @property
    def label(self) -> str:
        name = self.type if self.type == "chief" else f"{self.type} {self.index}"
        return name + (" (chief)" if self.role == "chief" and self.type != "chief" else "")

    @property
    def computes(self) -> bool:
        """Whether this task runs training steps (and so gets cores and devices)."""
        return self.type == "worker"


def cluster_tasks(cell: Cell) -> list[Task]:
    """The processes of a multi-worker cell, chief first. MultiWorkerMirrored: ``workers`` workers,
    worker 0 the chief. Parameter server: a chief (the coordinator), the workers and the ps tasks."""
    if cell.strategy == PARAMETER_SERVER:
        return ([Task("chief", 0, "chief")] + [Task("worker", i, "server") for i in range(cell.workers)]
                + [Task("ps", j, "server") for j in range(cell.ps)])
    return [Task("worker", i, "chief" if i == 0 else "peer") for i in range(cell.workers)]


def cluster_spec(tasks: list[Task], addresses: list[str]) -> dict[str, list[str]]:
    """TF_CONFIG's ``cluster``: each task type's addresses, in task-index order."""
    spec: dict[str, list[str]] = {}
    for task, address in zip(tasks, addresses):
        spec.setdefault(task.type, []).append(address)
    return spec


def cores_per_task(cell: Cell, host_cores: int) -> int:
    """Threads for each worker (and ps task) of a local cell: the host's cores split evenly
    between the processes that compute or apply updates (never below 1)."""
    return max(1, host_cores // (cell.workers + cell.ps))


def is_oversubscribed(cell: Cell, cores: int, host_cores: int) -> bool:
    """Whether the cell's workers and ps tasks together ask for more cores than the host has
    (the parameter-server coordinator, which mostly waits, is not counted)."""
    return cores * (cell.workers + cell.ps) > host_cores


def cluster_env(tasks: list[Task], addresses: list[str], position: int, cores: int,
                platform: Platform, replicas: int) -> dict[str, str]:
    """Environment of local task ``tasks[position]``: TF_CONFIG, its thread counts, its device mask
    (compute task c gets GPUs c*replicas .. c*replicas + replicas - 1; other tasks none)."""
    task = tasks[position]
    env = {
        "TF_CONFIG": json.dumps({"cluster": cluster_spec(tasks, addresses),
                                 "task": {"type": task.type, "index": task.index}}),
        "TF_NUM_INTRAOP_THREADS": str(cores), "OMP_NUM_THREADS": str(cores),
    }
    compute = [t for t in tasks if t.computes].index(task) if task.computes else None
    mask = "-1"  # no GPU for a CPU cell (even on a GPU machine), a coordinator or a ps task
    if platform.device_kind == "gpu" and compute is not None:
        mask = ",".join(str(compute * replicas + r) for r in range(replicas))
    env.update(CUDA_VISIBLE_DEVICES=mask, HIP_VISIBLE_DEVICES=mask)
    return env


def absent_worker(cell: Cell) -> int | None:
    """Test hook ``absent@N:<cell_id>``: task N of :func:`cluster_tasks` is never started (a peer
    that never appears)."""
    fault = injected_fault() or ""
    kind, _, target = fault.partition(":")
    if target == cell.id and kind.startswith("absent@"):
        return int(kind.split("@")[1])
    return None


def run_cluster(cell: Cell, options: WorkerOptions, name: str = "cell") -> Iterator[dict[str, Any]]:
    """Run a multi-worker cell as local processes (:func:`cluster_tasks`); yield the chief's events.

    Phases and deadlines: start-up (``startup_timeout_s``), rendezvous
    (``protocol.rendezvous_timeout_s``, until every task has joined: MultiWorkerMirroredStrategy's
    constructor waits for its peers forever, so the deadline is the launcher's), the cell
    (``protocol.cell_timeout_s``), then ``FINISH_GRACE_S`` for the peers to exit (servers are
    stopped as soon as the chief has its row). A task that dies (a server that exits at all), or any
    phase that overruns, stops every task (SIGTERM, then SIGKILL) and yields one ``failed`` event
    naming the task, the phase and the cause. Ports are released with the processes.
    """
    tasks = cluster_tasks(cell)
    host_cores = os.cpu_count() or 1
    cores = cores_per_task(cell, host_cores)
    addresses = [f"127.0.0.1:{p}" for p in free_ports(len(tasks))]
    missing = absent_worker(cell)
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        procs: dict[int, tuple[subprocess.Popen[bytes], _Events, Path]] = {}
        facts: dict[str, Any] | None = None
        seen: dict[int, set[str]] = {i: set() for i in range(len(tasks))}
        recorded = False
        phase, limit = "start-up (import TensorFlow, set up devices)", options.startup_timeout_s
        deadline = time.monotonic() + limit
        culprit = ""
        try:
            for i, task in enumerate(tasks):
                if i != missing:
                    env = cluster_env(tasks, addresses, i, cores, options.platform, cell.replicas)
                    launch = Launch(tuple(env.items()), task.role, i, cores, 1,
                                    is_oversubscribed(cell, cores, host_cores))
                    procs[i] = _start(cell, options, f"{name}-{task.type}{task.index}", Path(tmpdir),
                                      launch)

            def drain() -> Iterator[dict[str, Any]]:
                nonlocal facts, recorded
                for i, (_, events, _) in procs.items():
                    for ev in events.read():
                        seen[i].add(ev["event"])
                        if i != 0:  # only the chief's events reach the caller
                            continue
                        if ev["event"] == "ready":
                            facts = ev["facts"]
                        if ev["event"] == "record":
                            recorded = True
                        if ev["event"] in ("start", "record"):
                            yield {**ev, "facts": facts}

            def failed(i: int) -> bool:
                """Task i exited when it must not have: with an error, or a server at all."""
                proc = procs[i][0]
                if proc.poll() is None:
                    return False
                return proc.returncode != 0 or (tasks[i].role == "server" and not recorded)

            while True:
                yield from drain()
                everyone = range(len(tasks))
                if phase.startswith("start-up") and all("start" in seen[i] for i in procs):
                    phase = "rendezvous (every task joining the cluster)"
                    limit = options.protocol.rendezvous_timeout_s
                    deadline = time.monotonic() + limit
                if phase.startswith("rendezvous") and all("joined" in seen[i] for i in everyone):
                    phase, limit = f"cell {cell.id}", options.protocol.cell_timeout_s
                    deadline = time.monotonic() + limit
                if recorded and phase.startswith("cell"):
                    phase, limit = "shutdown", FINISH_GRACE_S
                    deadline = time.monotonic() + limit
                dead = [i for i in procs if failed(i)]
                if dead:
                    i = dead[0]
                    culprit = (f"{tasks[i].label} exited with {_signal_name(procs[i][0].returncode)} "
                               f"during {phase}; its log {procs[i][2]}: {_tail(procs[i][2])}")
                    break
                running = [i for i, (p, _, _) in procs.items() if p.poll() is None]
                if all(tasks[i].role == "server" for i in running) and (recorded or not running):
                    culprit = "" if recorded else f"every task exited without a record during {phase}"
                    break
                if time.monotonic() > deadline:
                    culprit = f"deadline passed: {phase} took over {limit:g} s"
                    absent = [tasks[i].label for i in everyone if i not in procs or "start" not in seen[i]]
                    waiting = [tasks[i].label for i in procs if "joined" not in seen[i]]
                    if absent:
                        culprit += f" ({', '.join(absent)} not there)"
                    elif phase.startswith("rendezvous") and waiting:
                        culprit += f" ({', '.join(waiting)} never joined)"
                    break
                time.sleep(POLL_S)
        finally:
            hows = {i: stop(p) for i, (p, _, _) in procs.items()}
        yield from drain()
        if recorded:
            return
        if culprit.startswith("deadline"):
            culprit += "; stopped with " + ", ".join(f"{tasks[i].label}: {h}" for i, h in hows.items())
        yield {"event": "failed", "cell_id": cell.id, "facts": facts,
               "reason": culprit or "the chief exited without a record"}


# ------------------------------------------------------------------------------------------------
# Real clusters: this process is one task, started by the user's scheduler (--cluster tf_config|slurm)
# ------------------------------------------------------------------------------------------------


def task_launch(config: ClusterConfig, platform: Platform, host_cores: int) -> Launch:
    """How this task's worker process of each cell is started: its TF_CONFIG, the host's cores split
    between the tasks on this host, and its device mask (the Slurm resolver's GPU split; none for a
    parameter-server coordinator or ps task, or a CPU run; else as inherited from the scheduler)."""
    cores = max(1, host_cores // config.tasks_on_my_host)
    env = {"TF_CONFIG": config.tf_config(), "TF_NUM_INTRAOP_THREADS": str(cores),
           "OMP_NUM_THREADS": str(cores)}
    mask = config.gpu_mask
    if platform.device_kind != "gpu" or (config.ps and config.task_type in ("chief", "ps")):
        mask = "-1"
    if mask is not None:
        env.update(CUDA_VISIBLE_DEVICES=mask, HIP_VISIBLE_DEVICES=mask)
    position = [(t, i) for t, addresses in config.spec for i in range(len(addresses))].index(
        (config.task_type, config.task_index))
    return Launch(tuple(env.items()), config.role, position, cores, config.hosts,
                  cores * config.tasks_on_my_host > host_cores)


def run_cluster_task(cell: Cell, options: WorkerOptions, name: str, config: ClusterConfig
                     ) -> Iterator[dict[str, Any]]:
    """This task's part of a cell on a real cluster: one worker process joined to the cluster in
    ``config``, with the start-up, rendezvous and cell deadlines of :func:`run_worker`."""
    launch = task_launch(config, options.platform, os.cpu_count() or 1)
    return run_worker(cell, options, name, launch, joins=True)


def serve_cluster_task(cell: Cell, options: WorkerOptions, config: ClusterConfig) -> int:
    """A parameter-server cluster's worker or ps task: one ``tf.distribute.Server`` for the whole
    run (``cell`` only names the job). Returns the server's exit code once it exits; stops it when
    this process is interrupted (SIGTERM or Ctrl-C)."""
    with tempfile.TemporaryDirectory(prefix="harness-") as tmpdir:
        launch = task_launch(config, options.platform, os.cpu_count() or 1)
        proc, _, _ = _start(cell, options, f"{config.task_type}{config.task_index}", Path(tmpdir),
                            launch)
        try:
            return proc.wait()
        finally:
            stop(proc)


# ------------------------------------------------------------------------------------------------
# Co-tenant cells: T independent worker processes of one cell on the same devices
# ------------------------------------------------------------------------------------------------

def run_tenants(cell: Cell, options: WorkerOptions, name: str) -> Iterator[dict[str, Any]]:
    """Start ``cell.tenants`` worker processes of the cell at once (each with every device of the
    cell and the host's cores; GPU memory growth is on in every worker), let them meet at a file
    barrier after their first call, and yield tenant 0's start, then one record that
    :func:`harness.tenancy.combine` makes of all of them (or the first tenant's failure)."""
    import threading

    from harness.tenancy import combine
    from harness.worker import TENANT_BARRIER_ENV

    with tempfile.TemporaryDirectory(prefix="harness-tenants-") as barrier:
        streams: list[list[dict[str, Any]]] = [[] for _ in range(cell.tenants)]

        def follow(i: int) -> None:
            launch = Launch(((TENANT_BARRIER_ENV, barrier),), "chief", i, None, 1, True)
            streams[i].extend(run_worker(cell, options, f"{name}-tenant{i}", launch))

        threads = [threading.Thread(target=follow, args=(i,), daemon=True)
                   for i in range(cell.tenants)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(POLL_S)
    facts = next((ev.get("facts") for ev in streams[0] if ev.get("facts")), None)
    yield {"event": "start", "cell_id": cell.id, "facts": facts}
    for i, events in enumerate(streams):
        failed = next((ev for ev in events if ev["event"] == "failed"), None)
        if failed is not None or not any(ev["event"] == "record" for ev in events):
            reason = failed["reason"] if failed else "no record"
            yield {"event": "failed", "cell_id": cell.id, "facts": facts,
                   "reason": f"tenant {i} of {cell.tenants}: {reason}"}
            return
    records = [next(ev for ev in events if ev["event"] == "record") for events in streams]
    row, windows = combine([r["row"] for r in records], [r["windows"] for r in records],
                           cell.effective_batch)
    yield {"event": "record", "row": row, "windows": windows, "facts": facts}


def run_cell_processes(cell: Cell, options: WorkerOptions, name: str) -> Iterator[dict[str, Any]]:
    """The events of one cell: one worker process, a local cluster for multi-worker cells, or
    several independent processes for co-tenant cells."""
    if cell.tenants > 1:
        return run_tenants(cell, options, name)
    return (run_cluster if cell.processes > 1 else run_worker)(cell, options, name)


# ------------------------------------------------------------------------------------------------
# Probe processes (harness doctor)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeResult:
    """What one probe process printed (JSON lines) and how it ended."""

    lines: list[dict[str, Any]]
    returncode: int | None
    """Exit status; negative: killed by that signal; None: stopped at the deadline."""
    stderr_tail: str


def run_probe_processes(argvs: list[list[str]], envs: list[dict[str, str]], timeout_s: float
                        ) -> list[ProbeResult]:
    """Start ``python -m`` + each argv at once (with its extra environment), wait for all up to
    ``timeout_s``, stop the rest; returns each one's JSON lines, exit status and stderr tail."""
    procs = []
    for argv, extra in zip(argvs, envs):
        env = {**os.environ, **WORKER_ENV, **extra}
        procs.append(subprocess.Popen([sys.executable, "-m", *argv], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env,
                                      start_new_session=True))
    deadline = time.monotonic() + timeout_s
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            stop(proc)  # type: ignore[arg-type]
            out, err = proc.communicate()
            code = None
        lines = []
        for line in out.splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        results.append(ProbeResult(lines, code, "\n".join(err.splitlines()[-STDERR_TAIL_LINES:])))
    return results
