"""``python -m harness doctor``: what this machine can run, and why a device might sit idle
(docs/how-to/laptop.md, "What can this machine run?").

The parent never imports TensorFlow: :mod:`harness.worker.probe` child processes report the devices,
build and thread settings and run the probes, one process per replica count (two MirroredStrategy
topologies in one process break each other's collectives), and two local workers per
MultiWorkerMirroredStrategy communication implementation. ParameterServerStrategy is not probed."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial

from harness.analysis.pages.doctor import SKIPPED, Report, warnings
from harness.contract.machine import MachineFacts
from harness.contract.probes import WORKER_PROBE_STRATEGY, Probe, ProbeFacts, ProbeStatus, local_probes, parse
from harness.errors import EXIT_FAILURE, HarnessError
from harness.launch.cells.local_cluster import cluster_env, free_ports, no_namespace_text
from harness.launch.cells.probes import run_probe_processes
from harness.launch.system import gpus, isolation
from harness.launch.system.isolation import NoNamespace, namespace
from harness.launch.system.platform import detect_platform, machine_facts
from harness.spec.cell import Cell
from harness.spec.ports import PortScope, port_scope
from harness.spec.protocol import Platform

MWMS_COMMUNICATIONS_CPU = ("auto", "ring")

MWMS_COMMUNICATIONS_GPU = ("auto", "ring", "nccl")

MWMS_WORKERS = 2


def default_replica_counts(gpu_count: int, logical: bool = False) -> list[int]:
    """CPU (no GPU): 2 and 3 logical devices (3 shows odd-count bugs). GPUs: 1, 2, 3 and all of
    them, as far as there are GPUs, and with ``logical`` (GPUs that can be split:
    :meth:`Platform.logical_gpus`) two logical GPUs on each."""
    if gpu_count == 0:
        return [2, 3]
    counts = {c for c in (1, 2, 3, gpu_count) if c <= gpu_count}
    return sorted(counts | ({2 * gpu_count} if logical else set()))


def collect_local(replicas: int, probes: list[Probe], ended: str) -> list[Probe]:
    """The probes of one local probe process; those it never reported failed with ``ended``."""
    got = {(p.strategy, p.cross_device_ops): replace(p, replicas=replicas) for p in probes}
    failed = f"the probe process {ended} before this probe reported (it may have crashed in it)"
    return [
        got.get(key) or Probe(*key, replicas, ProbeStatus.FAILS, failed) for key in local_probes(replicas)
    ]


def collect_workers(communication: str, per_worker: list[tuple[list[Probe], str]]) -> Probe:
    """One MultiWorkerMirrored probe from its workers' probes: works only if every worker says so."""
    results = [(i, next(iter(probes), None), ended) for i, (probes, ended) in enumerate(per_worker)]
    bad = [(i, d, ended) for i, d, ended in results if d is None or d.status != ProbeStatus.WORKS]
    n = len(per_worker)
    probe = partial(Probe, WORKER_PROBE_STRATEGY, communication, n, workers=n)
    if not bad:
        first = results[0][1]
        return probe(ProbeStatus.WORKS, first.detail if first else "", first.effective if first else "")
    i, d, ended = bad[0]
    if d is None:
        return probe(ProbeStatus.FAILS, f"worker {i}: the probe process {ended} before reporting")
    return probe(d.status, f"worker {i}: {d.detail}", d.effective)


def ended_as(returncode: int | None, stderr_tail: str) -> str:
    """How a probe process ended, in words, with its last stderr line."""
    if returncode is None:
        how = "was stopped at the deadline"
    elif returncode < 0:
        how = f"died with signal {-returncode}"
    else:
        how = f"exited with code {returncode}"
    last = stderr_tail.strip().splitlines()[-1:] if stderr_tail.strip() else []
    return how + (f" ({last[0][:200]})" if last else "")


def examine(
    device: str = "auto",
    replica_counts: list[int] | None = None,
    timeout_s: float = 180.0,
    open_ports: bool = False,
) -> Report:
    """Run every probe process and assemble the report (takes a minute or two on 2 cores);
    ``open_ports``: probe local workers even where no namespace keeps their ports off the network."""
    ports = isolation.check()
    scope = port_scope(ports.works, open_ports)
    facts, kind, platform, counts = _facts(device, replica_counts, timeout_s)
    gpu_count = platform.gpu_count
    probes: list[Probe] = []
    for r in counts:
        args = ["local", kind, str(r), str(gpu_count), str(platform.gpu_memory_mib)]
        res = run_probe_processes([args], [{} if kind == "GPU" else CPU_ENV], timeout_s)[0]
        probes += collect_local(r, parse(res.lines)[1], ended_as(res.returncode, res.stderr_tail))
    probes += _worker_probes(kind, gpu_count, timeout_s, scope)
    os_list = gpus.os_gpus()
    procs, nvml = gpus.gpu_processes()
    found = warnings(facts, os_list, procs, {os.getpid()}, probes)
    scope_text = f"{scope.words} ({ports.detail})"
    return Report(facts, os_list, procs, nvml, probes, found, scope_text, machine_text(machine_facts()))


def machine_text(facts: MachineFacts) -> str:
    """The report's machine in two lines: the name its rows get by default, then its facts."""
    return f"{facts.default_name} (run --machine NAME names it otherwise)\n{facts.words}"


CPU_ENV = {"CUDA_VISIBLE_DEVICES": "-1", "HIP_VISIBLE_DEVICES": "-1"}


def _ask_facts(kind: str, replicas: int, timeout_s: float) -> ProbeFacts:
    res = run_probe_processes(
        [["facts", kind, str(replicas)]], [CPU_ENV if kind == "CPU" else {}], timeout_s
    )[0]
    found = parse(res.lines)[0]
    if found is None:
        raise HarnessError(
            "TensorFlow could not report its devices: the probe process "
            f"{ended_as(res.returncode, res.stderr_tail)}",
            EXIT_FAILURE,
        )
    return found


def _facts(
    device: str, replica_counts: list[int] | None, timeout_s: float
) -> tuple[ProbeFacts, str, Platform, list[int]]:
    """(facts, device type probed, the GPUs as planned for (their count; memory from nvidia-smi,
    0 where unknown, so none is split), replica counts); HarnessError on a bad request."""
    facts = None if device == "cpu" else _ask_facts("GPU", 1, timeout_s)
    if facts is None or not facts.gpu_count:
        if device == "gpu":
            raise HarnessError(
                "Received --device=gpu, but TensorFlow sees no GPU; expected --device cpu or auto."
            )
        counts = replica_counts or default_replica_counts(0)
        return _ask_facts("CPU", max(counts), timeout_s), "CPU", Platform("cpu", 0), counts
    gpu_count = facts.gpu_count
    seen = detect_platform("auto")
    memory = seen.gpu_memory_mib if seen.gpu_count == gpu_count else 0
    platform = Platform("gpu", gpu_count, gpu_memory_mib=memory, mig=seen.mig)
    counts = replica_counts or default_replica_counts(gpu_count, platform.max_replicas > gpu_count)
    if max(counts) > platform.max_replicas:
        split = "" if platform.max_replicas == gpu_count else " (logical GPUs included)"
        raise HarnessError(
            f"Received --replicas {','.join(map(str, counts))}; this machine "
            f"has {gpu_count} GPU(s); expected counts from 1 to {platform.max_replicas}{split}."
        )
    return facts, "GPU", platform, counts


def _worker_probes(kind: str, gpu_count: int, timeout_s: float, scope: PortScope) -> list[Probe]:
    """MultiWorkerMirrored with two local workers per communication implementation (TF_CONFIG,
    device masks and network namespace exactly as a local multi-worker cell gets them)."""
    communications: tuple[str, ...] = MWMS_COMMUNICATIONS_CPU
    probes: list[Probe] = []
    if not scope.runs:
        return [_skipped("-", scope.words)]
    if kind == "GPU":
        communications = MWMS_COMMUNICATIONS_GPU if gpu_count >= MWMS_WORKERS else ()
        if not communications:
            probes.append(_skipped("-", f"needs {MWMS_WORKERS} GPUs, one per local worker"))
    cores = max(1, (os.cpu_count() or 1) // MWMS_WORKERS)
    platform = Platform("gpu" if kind == "GPU" else "cpu", gpu_count, 1, ports=scope.name)
    for comm in communications:
        cell = Cell(strategy=WORKER_PROBE_STRATEGY, communication=comm, workers=MWMS_WORKERS)
        addresses = [f"127.0.0.1:{p}" for p in free_ports(MWMS_WORKERS)]
        try:
            with namespace(platform) as isolated:
                envs = [
                    {**cluster_env(cell, cell.tasks, addresses, i, cores, platform), **isolated}
                    for i in range(MWMS_WORKERS)
                ]
                argvs = [["worker", kind, str(MWMS_WORKERS), comm]] * MWMS_WORKERS
                results = run_probe_processes(argvs, envs, timeout_s)
        except NoNamespace as e:
            probes.append(_skipped(comm, no_namespace_text(e)))
            continue
        ended = [(parse(r.lines)[1], ended_as(r.returncode, r.stderr_tail)) for r in results]
        probes.append(collect_workers(comm, ended))
    return probes


def _skipped(op: str, why: str) -> Probe:
    return Probe(WORKER_PROBE_STRATEGY, op, MWMS_WORKERS, SKIPPED, why, workers=MWMS_WORKERS)
