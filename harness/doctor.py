"""``python -m harness doctor``: what this machine can run, and why a device might sit idle.

The parent never imports TensorFlow. It asks :mod:`harness.doctor_probe` child processes for the
devices, build and thread settings, then probes every single-process strategy and cross-device op
at each replica count (one process per count: two MirroredStrategy topologies in one process break
each other's collectives) and MultiWorkerMirroredStrategy with two local workers per communication
implementation. It adds what the OS (``/sys/class/drm``) and NVML say about GPUs, and turns all of
it into warnings in words. ParameterServerStrategy needs a cluster of servers and is not probed
here (``python -m harness run --strategy parameter_server --workers 1 --ps 1`` exercises it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from harness import doctor_probe, gpus
from harness.doctor_probe import FAILS, UNSUPPORTED, WORKS, WRONG

SKIPPED = "not probed"
from harness.summary import fixed_width

PROBE_MODULE = "harness.doctor_probe"
MWMS_COMMUNICATIONS_CPU = ("auto", "ring")
MWMS_COMMUNICATIONS_GPU = ("auto", "ring", "nccl")
MWMS_WORKERS = 2


@dataclass(frozen=True)
class Probe:
    """One strategy x cross-device op at one replica count: works, unsupported, fails or wrong
    result, with the reason and the op TensorFlow really used."""

    strategy: str
    cross_device_ops: str
    replicas: int
    status: str
    detail: str
    effective: str = ""
    workers: int = 1


@dataclass(frozen=True)
class Report:
    """Everything doctor found. ``facts``: the probe child's devices/build/threads JSON."""

    facts: dict[str, Any]
    os_gpus: list[gpus.OsGpu]
    gpu_processes: list[gpus.GpuProcess]
    nvml: str
    probes: list[Probe]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def default_replica_counts(gpu_count: int) -> list[int]:
    """CPU (no GPU): 2 and 3 logical devices (3 shows odd-count bugs). GPUs: 1, 2, 3 and all of
    them, as far as there are GPUs."""
    if gpu_count == 0:
        return [2, 3]
    return sorted({c for c in (1, 2, 3, gpu_count) if c <= gpu_count})


def collect_local(replicas: int, lines: list[dict[str, Any]], ended: str) -> list[Probe]:
    """The probes of one local probe process; those it never reported failed with ``ended``."""
    got = {(d["strategy"], d["cross_device_ops"]): d for d in lines if d.get("kind") == "probe"}
    out = []
    for strategy, op in doctor_probe.local_probes(replicas):
        d = got.get((strategy, op))
        if d is None:
            out.append(Probe(strategy, op, replicas, FAILS, f"the probe process {ended} before "
                             "this probe reported (it may have crashed in it)"))
        else:
            out.append(Probe(strategy, op, replicas, d["status"], d["detail"], d.get("effective", "")))
    return out


def collect_workers(communication: str, per_worker: list[tuple[list[dict[str, Any]], str]]
                    ) -> Probe:
    """One MultiWorkerMirrored probe from its workers' lines: works only if every worker says so."""
    results = []
    for i, (lines, ended) in enumerate(per_worker):
        d = next((x for x in lines if x.get("kind") == "probe"), None)
        results.append((i, d, ended))
    bad = [(i, d, ended) for i, d, ended in results if d is None or d["status"] != WORKS]
    replicas = len(per_worker)
    if not bad:
        d = results[0][1] or {}
        return Probe("multi_worker_mirrored", communication, replicas, WORKS, d.get("detail", ""),
                     d.get("effective", ""), workers=len(per_worker))
    i, d, ended = bad[0]
    if d is None:
        return Probe("multi_worker_mirrored", communication, replicas, FAILS,
                     f"worker {i}: the probe process {ended} before reporting",
                     workers=len(per_worker))
    return Probe("multi_worker_mirrored", communication, replicas, d["status"],
                 f"worker {i}: {d['detail']}", d.get("effective", ""), workers=len(per_worker))


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


# ------------------------------------------------------------------------------------------------
# Warnings: pure functions of what was found
# ------------------------------------------------------------------------------------------------

def _vendor_warnings(facts: dict[str, Any], os_list: list[gpus.OsGpu]) -> list[str]:
    out = []
    os_vendors: dict[str, int] = {}
    for g in os_list:
        if g.vendor in ("NVIDIA", "AMD"):
            os_vendors[g.vendor] = os_vendors.get(g.vendor, 0) + 1
    tf_gpus = [d for d in facts.get("physical", []) if d["type"] == "GPU"]
    build = facts.get("build", {})
    drives = "ROCm (AMD)" if build.get("is_rocm_build") else "CUDA (NVIDIA)" if build.get(
        "is_cuda_build") else "no GPU (CPU-only build)"
    if len(os_vendors) > 1:
        counts = " and ".join(f"{n} {v}" for v, n in sorted(os_vendors.items()))
        out.append(f"mixed GPU vendors: the machine has {counts} GPU(s). One TensorFlow process "
                   f"drives either CUDA or ROCm devices, never both; this build drives {drives}. "
                   "Use the others from a second process with the other build (tensorflow-rocm or "
                   "tensorflow[and-cuda]); they cannot join one MirroredStrategy.")
    if os_vendors and not tf_gpus:
        out.append(f"the OS lists {sum(os_vendors.values())} GPU(s) but TensorFlow sees none: this "
                   f"build drives {drives}, or CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES hide them")
    return out


def _gpu_warnings(facts: dict[str, Any], procs: list[gpus.GpuProcess], own_pids: set[int]
                  ) -> list[str]:
    out = []
    others = [p for p in procs if p.pid not in own_pids]
    by_gpu: dict[int, list[gpus.GpuProcess]] = {}
    for p in others:
        by_gpu.setdefault(p.gpu, []).append(p)
    for gpu, ps in sorted(by_gpu.items()):
        used = sum(p.used_bytes or 0 for p in ps) / 2**30
        out.append(f"GPU {gpu}: {len(ps)} other process(es) hold {used:.1f} GiB (pids "
                   f"{', '.join(str(p.pid) for p in ps[:5])}): timings there are shared")
    growth = facts.get("memory_growth", {})
    forced = facts.get("env", {}).get("TF_FORCE_GPU_ALLOW_GROWTH", "").lower() == "true"
    if growth and not any(growth.values()) and not forced:
        out.append("GPU memory growth is off by default: a TensorFlow process maps nearly all GPU "
                   "memory at start, so a second process on that GPU fails to allocate. The harness "
                   "turns growth on for every cell; in your own scripts set "
                   "TF_FORCE_GPU_ALLOW_GROWTH=true or tf.config.experimental.set_memory_growth.")
    return out


def _thread_warnings(facts: dict[str, Any]) -> list[str]:
    t = facts.get("threads", {})
    out = []
    if t and t.get("affinity", 0) < t.get("cores", 0):
        out.append(f"this process may run on {t['affinity']} of the host's {t['cores']} cores "
                   "(CPU affinity, e.g. taskset or a container's cpuset)")
    return out


def _probe_warnings(probes: list[Probe], gpu_count: int) -> list[str]:
    out = []
    for p in probes:
        if p.status == WRONG:
            out.append(f"{p.strategy} with {p.cross_device_ops} on {p.replicas} replicas returns "
                       f"wrong sums ({p.detail}): gradients would be silently wrong; do not train "
                       "with it here")
        elif p.status in (FAILS, UNSUPPORTED) and gpu_count and "nccl" in p.cross_device_ops:
            out.append(f"{p.strategy} with {p.cross_device_ops} on {p.replicas} replicas: "
                       f"{p.status} ({p.detail})")
    return out


def warnings(facts: dict[str, Any], os_list: list[gpus.OsGpu], procs: list[gpus.GpuProcess],
             own_pids: set[int], probes: list[Probe]) -> list[str]:
    """Every warning, in words: vendors, GPU sharing and memory growth, threads, probe results."""
    gpu_count = sum(1 for d in facts.get("physical", []) if d["type"] == "GPU")
    return (_vendor_warnings(facts, os_list) + _gpu_warnings(facts, procs, own_pids)
            + _thread_warnings(facts) + _probe_warnings(probes, gpu_count))


# ------------------------------------------------------------------------------------------------
# Running it (processes via harness.launch)
# ------------------------------------------------------------------------------------------------

class DoctorError(RuntimeError):
    """The facts probe itself failed (TensorFlow does not import or start)."""


def examine(device: str = "auto", replica_counts: list[int] | None = None,
            timeout_s: float = 180.0) -> Report:
    """Run every probe process and assemble the report (takes a minute or two on 2 cores)."""
    import os

    from harness.launch import Task, cluster_env, free_ports, run_probe_processes
    from harness.spec import Platform

    cpu_env = {"CUDA_VISIBLE_DEVICES": "-1", "HIP_VISIBLE_DEVICES": "-1"}

    def ask_facts(kind: str, replicas: int) -> dict[str, Any]:
        res = run_probe_processes([[PROBE_MODULE, "facts", kind, str(replicas)]],
                                  [cpu_env if kind == "CPU" else {}], timeout_s)[0]
        found = next((d for d in res.lines if d.get("kind") == "facts"), None)
        if found is None:
            raise DoctorError("TensorFlow could not report its devices: the probe process "
                              f"{ended_as(res.returncode, res.stderr_tail)}")
        return found

    if device == "cpu":
        kind, gpu_count = "CPU", 0
        counts = replica_counts or default_replica_counts(0)
        facts = ask_facts("CPU", max(counts))
    else:
        facts = ask_facts("GPU", 1)
        gpu_count = sum(1 for d in facts["physical"] if d["type"] == "GPU")
        if device == "gpu" and gpu_count == 0:
            raise DoctorError("Received --device=gpu, but TensorFlow sees no GPU; expected "
                              "--device cpu or auto.")
        kind = "GPU" if gpu_count else "CPU"
        counts = replica_counts or default_replica_counts(gpu_count)
        if kind == "GPU" and max(counts) > gpu_count:
            raise DoctorError(f"Received --replicas {','.join(map(str, counts))}; this machine "
                              f"has {gpu_count} GPU(s); expected counts from 1 to {gpu_count}.")
        if kind == "CPU":  # list the logical devices of the largest count
            facts = ask_facts("CPU", max(counts))
    mask = {} if kind == "GPU" else cpu_env
    probes: list[Probe] = []
    for r in counts:
        res = run_probe_processes([[PROBE_MODULE, "local", kind, str(r)]], [mask], timeout_s)[0]
        probes += collect_local(r, res.lines, ended_as(res.returncode, res.stderr_tail))
    communications = MWMS_COMMUNICATIONS_CPU
    if kind == "GPU":
        communications = MWMS_COMMUNICATIONS_GPU if gpu_count >= MWMS_WORKERS else ()
        if not communications:
            probes.append(Probe("multi_worker_mirrored", "-", MWMS_WORKERS, SKIPPED,
                                f"needs {MWMS_WORKERS} GPUs, one per local worker",
                                workers=MWMS_WORKERS))
    tasks = [Task("worker", i, "chief" if i == 0 else "peer") for i in range(MWMS_WORKERS)]
    cores = max(1, (os.cpu_count() or 1) // MWMS_WORKERS)
    platform = Platform("gpu" if kind == "GPU" else "cpu", gpu_count, 1)
    for comm in communications:
        addresses = [f"127.0.0.1:{p}" for p in free_ports(MWMS_WORKERS)]
        envs = [cluster_env(tasks, addresses, i, cores, platform, 1) for i in range(MWMS_WORKERS)]
        results = run_probe_processes(
            [[PROBE_MODULE, "worker", kind, str(MWMS_WORKERS), comm]] * MWMS_WORKERS, envs,
            timeout_s)
        probes.append(collect_workers(comm, [(r.lines, ended_as(r.returncode, r.stderr_tail))
                                             for r in results]))
    os_list = gpus.os_gpus()
    procs, nvml = gpus.gpu_processes()
    return Report(facts, os_list, procs, nvml, probes,
                  warnings(facts, os_list, procs, {os.getpid()}, probes))


# ------------------------------------------------------------------------------------------------
# Rendering
# ------------------------------------------------------------------------------------------------

def render(report: Report) -> str:
    """The human-readable report: devices, build, threads, the probe table, warnings, advice."""
    f = report.facts
    lines = ["Devices (TensorFlow):"]
    rows = [("physical", "type", "vendor", "model")]
    rows += [(d["name"], d["type"], d["vendor"] or "-", d["model"] or "-") for d in f["physical"]]
    lines += ["  " + s for s in fixed_width(rows).splitlines()]
    lines.append(f"  logical {f['logical_type']} devices: {', '.join(f['logical'])}")
    if report.os_gpus:
        lines.append("  GPUs the OS lists: " + ", ".join(f"{g.card} {g.vendor} ({g.pci})"
                                                         for g in report.os_gpus))
    b = f["build"]
    gpu_build = ("CUDA " + str(b.get("cuda_version")) + ", cuDNN " + str(b.get("cudnn_version"))
                 if b.get("is_cuda_build") else "ROCm " + str(b.get("rocm_version"))
                 if b.get("is_rocm_build") else "CPU only")
    t = f["threads"]
    lines += ["", f"TensorFlow {f['tensorflow']} ({gpu_build}), Keras {f['keras']}",
              (f"Threads: intra-op {t['intra_op'] or 'default (all cores)'}, inter-op "
               f"{t['inter_op'] or 'default'}, {t['affinity']} of {t['cores']} cores usable"),
              f"GPU memory growth: {f['memory_growth'] or 'no GPU'}",
              f"GPU processes (NVML): {report.nvml or len(report.gpu_processes)}", "",
              "Probes (an all-reduce of replica ids 1..n, sum checked on every replica):"]
    rows = [("strategy", "cross-device ops", "replicas", "result", "detail")]
    rows += [(p.strategy, p.cross_device_ops, str(p.replicas) if p.workers == 1 else
              f"{p.replicas} ({p.workers} workers)", p.status, p.detail[:110])
             for p in report.probes]
    lines += ["  " + s for s in fixed_width(rows).splitlines()]
    lines += ["", "Warnings:" if report.warnings else "Warnings: none"]
    lines += [f"  - {w}" for w in report.warnings]
    lines += ["", advice(report)]
    return "\n".join(lines)


def advice(report: Report) -> str:
    """Which cross-device ops gave right sums at each replica count, and how to time them."""
    works: dict[int, list[str]] = {}
    for p in report.probes:
        if p.strategy == "mirrored" and p.status == WORKS:
            works.setdefault(p.replicas, []).append(p.cross_device_ops)
    if not works:
        return "No MirroredStrategy cross-device op worked here."
    parts = "; ".join(f"{r} replica(s): {', '.join(ops)}" for r, ops in sorted(works.items()))
    return (f"Cross-device ops that gave right sums: {parts}. Which is fastest depends on the "
            "model: time them with python -m harness run --strategy mirrored --cross-device-ops "
            "auto,reduction_to_one_device --replicas N.")


def to_json_text(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, default=str)
