"""``harness doctor``'s findings: the probe results, the warnings in words and the rendering (pure)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

from harness.analysis.run.tables import render_table
from harness.contract.probes import GpuProcess, OsGpu, Probe, ProbeFacts, ProbeStatus
from harness.spec.axes import AXIS_BY_NAME

SKIPPED = ProbeStatus.SKIPPED


@dataclass(frozen=True)
class Report:
    """Everything doctor found. ``facts``: the probe child's devices, build and threads."""

    facts: ProbeFacts
    os_gpus: list[OsGpu]
    gpu_processes: list[GpuProcess]
    nvml: str
    probes: list[Probe]
    warnings: list[str] = field(default_factory=list)
    ports: str = ""
    """Where local clusters' TensorFlow servers can be reached from here, in one sentence."""
    machine: str = ""
    """The machine's default name (the rows' machine column without ``--machine``), then its facts,
    in one line each."""


def _vendor_warnings(facts: ProbeFacts, os_list: list[OsGpu]) -> list[str]:
    out = []
    os_vendors = Counter(g.vendor for g in os_list if g.vendor in ("NVIDIA", "AMD"))
    drives = (
        "ROCm (AMD)"
        if facts.build.is_rocm_build
        else "CUDA (NVIDIA)"
        if facts.build.is_cuda_build
        else "no GPU (CPU-only build)"
    )
    if len(os_vendors) > 1:
        counts = " and ".join(f"{n} {v}" for v, n in sorted(os_vendors.items()))
        out.append(
            f"mixed GPU vendors: the machine has {counts} GPU(s). One TensorFlow process "
            f"drives either CUDA or ROCm devices, never both; this build drives {drives}. "
            "Use the others from a second process with the other build (tensorflow-rocm or "
            "tensorflow[and-cuda]); they cannot join one MirroredStrategy."
        )
    if os_vendors and not facts.gpu_count:
        out.append(
            f"the OS lists {sum(os_vendors.values())} GPU(s) but TensorFlow sees none: this "
            f"build drives {drives}, or CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES hide them"
        )
    return out


def _gpu_warnings(facts: ProbeFacts, procs: list[GpuProcess], own_pids: set[int]) -> list[str]:
    out = []
    others = [p for p in procs if p.pid not in own_pids]
    by_gpu: dict[int, list[GpuProcess]] = {}
    for p in others:
        by_gpu.setdefault(p.gpu, []).append(p)
    for gpu, ps in sorted(by_gpu.items()):
        used = sum(p.used_bytes or 0 for p in ps) / 2**30
        out.append(
            f"GPU {gpu}: {len(ps)} other process(es) hold {used:.1f} GiB (pids "
            f"{', '.join(str(p.pid) for p in ps[:5])}): timings there are shared"
        )
    growth = facts.memory_growth
    forced = facts.env.get("TF_FORCE_GPU_ALLOW_GROWTH", "").lower() == "true"
    if growth and not any(growth.values()) and not forced:
        out.append(
            "GPU memory growth is off by default: a TensorFlow process maps nearly all GPU "
            "memory at start, so a second process on that GPU fails to allocate. The harness "
            "turns growth on for every cell; in your own scripts set "
            "TF_FORCE_GPU_ALLOW_GROWTH=true or tf.config.experimental.set_memory_growth."
        )
    return out


def _thread_warnings(facts: ProbeFacts) -> list[str]:
    t = facts.threads
    if t.affinity >= t.cores:
        return []
    cores = f"{t.affinity} of the host's {t.cores} cores"
    return [f"this process may run on {cores} (CPU affinity, e.g. taskset or a container's cpuset)"]


def _probe_warnings(probes: list[Probe], gpu_count: int) -> list[str]:
    out = []
    for p in probes:
        if p.status == ProbeStatus.WRONG:
            out.append(
                f"{p.strategy} with {p.cross_device_ops} on {p.replicas} replicas returns "
                f"wrong sums ({p.detail}): gradients would be silently wrong; do not train "
                "with it here"
            )
        elif (
            p.status in (ProbeStatus.FAILS, ProbeStatus.UNSUPPORTED)
            and gpu_count
            and "nccl" in p.cross_device_ops
        ):
            out.append(
                f"{p.strategy} with {p.cross_device_ops} on {p.replicas} replicas: {p.status} ({p.detail})"
            )
    return out


def warnings(
    facts: ProbeFacts, os_list: list[OsGpu], procs: list[GpuProcess], own_pids: set[int], probes: list[Probe]
) -> list[str]:
    """Every warning, in words: vendors, GPU sharing and memory growth, threads, probe results."""
    return (
        _vendor_warnings(facts, os_list)
        + _gpu_warnings(facts, procs, own_pids)
        + _thread_warnings(facts)
        + _probe_warnings(probes, facts.gpu_count)
    )


def render(report: Report) -> str:
    """The human-readable report: devices, build, threads, the probe table, warnings, advice."""
    f = report.facts
    lines = ["Devices (TensorFlow):"]
    rows: list[tuple[str, ...]] = [("physical", "type", "vendor", "model")]
    rows += [(d.name, d.type, d.vendor or "-", d.model or "-") for d in f.physical]
    lines.append(render_table(rows[0], rows[1:], indent=2))
    lines.append(f"  logical {f.logical_type} devices: {', '.join(f.logical)}")
    if report.os_gpus:
        lines.append(
            "  GPUs the OS lists: " + ", ".join(f"{g.card} {g.vendor} ({g.pci})" for g in report.os_gpus)
        )
    b = f.build
    gpu_build = (
        f"CUDA {b.cuda_version}, cuDNN {b.cudnn_version}"
        if b.is_cuda_build
        else f"ROCm {b.rocm_version}"
        if b.is_rocm_build
        else "CPU only"
    )
    t = f.threads
    lines += [
        "",
        f"TensorFlow {f.tensorflow} ({gpu_build}), Keras {f.keras}",
        (
            f"Threads: intra-op {t.intra_op or 'default (all cores)'}, inter-op "
            f"{t.inter_op or 'default'}, {t.affinity} of {t.cores} cores usable"
        ),
        f"GPU memory growth: {f.memory_growth or 'no GPU'}",
        f"GPU processes (NVML): {report.nvml or len(report.gpu_processes)}",
        f"Local clusters: {report.ports}",
        *(
            f"Machine: {line}" if i == 0 else f"  {line}"
            for i, line in enumerate(report.machine.splitlines())
        ),
        "",
        "Probes (an all-reduce of replica ids 1..n, sum checked on every replica):",
    ]
    rows = [("strategy", "cross-device ops", "replicas", "result", "detail")]
    rows += [
        (
            p.strategy,
            p.cross_device_ops,
            str(p.replicas) if p.workers == 1 else f"{p.replicas} ({p.workers} workers)",
            p.status,
            p.detail[:110],
        )
        for p in report.probes
    ]
    lines.append(render_table(rows[0], rows[1:], indent=2))
    lines += ["", "Warnings:" if report.warnings else "Warnings: none"]
    lines += [f"  - {w}" for w in report.warnings]
    lines += ["", advice(report)]
    return "\n".join(lines)


def advice(report: Report) -> str:
    """Which cross-device ops gave right sums at each replica count, and how to time them."""
    works: dict[int, list[str]] = {}
    for p in report.probes:
        if p.strategy in AXIS_BY_NAME["cross_device_ops"].applies_to and p.status == ProbeStatus.WORKS:
            works.setdefault(p.replicas, []).append(p.cross_device_ops)
    if not works:
        return "No MirroredStrategy cross-device op worked here."
    parts = "; ".join(f"{r} replica(s): {', '.join(ops)}" for r, ops in sorted(works.items()))
    return (
        f"Cross-device ops that gave right sums: {parts}. Which is fastest depends on the "
        "model: time them with python -m harness run --strategy mirrored --cross-device-ops "
        "auto,reduction_to_one_device --replicas N."
    )


def to_json_text(report: Report) -> str:
    """``doctor --json``: the report; its facts as the probe child's line (``kind`` first)."""
    out = asdict(report)
    out["facts"] = {"kind": "facts", **out["facts"]}
    return json.dumps(out, indent=2, default=str)
