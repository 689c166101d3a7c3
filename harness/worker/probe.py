"""The TensorFlow side of ``harness doctor``: run in a child process, prints one JSON line per fact.

``python -m harness.worker.probe facts|local GPU|CPU REPLICAS`` (the devices, build and threads; or
every single-process strategy and cross-device op, :data:`LOCAL_PROBES`); ``... worker GPU|CPU
WORKERS COMMUNICATION`` is one task of a MultiWorkerMirroredStrategy probe. Each probe prints a line
as soon as it ends, so a probe that kills the process still leaves the earlier ones' results. A
probe checks that an all-reduce of (replica id + 1) gives n(n+1)/2 on every replica."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, fields
from functools import partial
from typing import Any

from harness.contract.probes import (
    LOCAL_PROBES,
    WORKER_PROBE_STRATEGY,
    Build,
    Device,
    ProbeFacts,
    ProbeStatus,
    Threads,
    local_probes,
)
from harness.spec.cell import Cell
from harness.spec.protocol import Platform
from harness.worker.checks.integrity import allreduce_sums
from harness.worker.devices import configure_devices
from harness.worker.fingerprint import host_cpu
from harness.worker.training.strategies import effective_cross_device_ops, make_strategy

UNSUPPORTED_SIGNS = (
    "No OpKernel was registered",
    "not supported",
    "Could not satisfy device",
    "no supported devices",
    "NCCL is not supported",
)
"""Error texts that mean "this machine or build has no kernel or device for it" (vs a failure)."""
PROBE_COLLECTIVE_TIMEOUT_S = 60
"""Seconds a MultiWorkerMirrored probe's all-reduce may take before TensorFlow fails it."""


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"kind": kind, **fields}, default=str), flush=True)


def _vendor(name: str, build: Build) -> str:
    low = name.lower()
    for vendor, signs in (
        ("NVIDIA", ("nvidia", "tesla", "geforce", "quadro")),
        ("AMD", ("amd", "radeon", "instinct", "gfx")),
    ):
        if any(s in low for s in signs):
            return vendor
    return "AMD" if build.is_rocm_build else "NVIDIA" if build.is_cuda_build else ""


def facts(device_type: str, replicas: int) -> None:
    """Physical and logical devices (vendor, model), the build, Keras, threads, memory growth."""
    import keras
    import tensorflow as tf

    info = tf.sysconfig.get_build_info()
    build = Build(**{f.name: info.get(f.name) for f in fields(Build)})
    physical = []
    for d in tf.config.list_physical_devices():
        if d.device_type == "GPU":
            details = tf.config.experimental.get_device_details(d)
            name = details.get("device_name", "")
            capability = list(details.get("compute_capability", ()))
            physical.append(Device(d.name, d.device_type, name, _vendor(name, build), capability))
        else:
            physical.append(Device(d.name, d.device_type, host_cpu(), "", []))
    growth = {
        g.name: tf.config.experimental.get_memory_growth(g) for g in tf.config.list_physical_devices("GPU")
    }
    if device_type == "GPU" and not growth:  # asked for GPUs, TensorFlow sees none: list CPUs
        device_type = "CPU"
    kind, logical = configure_devices(platform_of(device_type, replicas), replicas)
    threads = Threads(
        tf.config.threading.get_intra_op_parallelism_threads(),
        tf.config.threading.get_inter_op_parallelism_threads(),
        os.cpu_count() or 0,
        len(os.sched_getaffinity(0)),
    )
    steering = "TF_FORCE_GPU_ALLOW_GROWTH TF_GPU_ALLOCATOR CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES"
    steering += " TF_NUM_INTRAOP_THREADS TF_NUM_INTEROP_THREADS OMP_NUM_THREADS"
    env = {k: v for k, v in os.environ.items() if k in steering.split()}
    found = ProbeFacts(
        physical, logical, kind, tf.__version__, keras.__version__, build, threads, growth, env
    )
    emit("facts", **asdict(found))


def platform_of(device_type: str, replicas: int, gpu_count: int = 0, memory_mib: int = 0) -> Platform:
    """The platform a probe plans its devices on: ``gpu_count`` GPUs of ``memory_mib`` each (split
    into logical GPUs where ``replicas`` is more: :meth:`Platform.logical_gpus`; 0: a GPU per
    replica), or ``replicas`` logical CPU devices."""
    if device_type == "GPU":
        return Platform("gpu", gpu_count or replicas, replicas, gpu_memory_mib=memory_mib)
    return Platform("cpu", replicas, replicas)


def where(platform: Platform, replicas: int) -> str:
    """``"2 logical GPUs on 1 GPU: "`` where the replicas share GPUs, else empty."""
    split = platform.logical_gpus(replicas)
    if split is None:
        return ""
    return f"{replicas} logical GPUs on {-(-replicas // split.per_gpu)} GPU(s), {split.memory_mib} MiB each: "


def classify(error: BaseException) -> tuple[str, str]:
    """(status, first line of the reason) of a probe that raised."""
    text = f"{type(error).__name__}: {error}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), text)[:300]
    status = ProbeStatus.UNSUPPORTED if any(s in text for s in UNSUPPORTED_SIGNS) else ProbeStatus.FAILS
    return status, first


def judge(sums: list[float], replicas: int, local: int | None = None) -> tuple[str, str]:
    """(status, detail) of an all-reduce's results on this process's ``local`` replicas (all
    ``replicas`` in one process)."""
    want = replicas * (replicas + 1) / 2
    if len(sums) == (local or replicas) and all(s == want for s in sums):
        return ProbeStatus.WORKS, f"sum {want:g} on every replica"
    return ProbeStatus.WRONG, f"all-reduce of 1..{replicas} returned {sums}, expected {want:g}"


def probe(
    strategy_name: str,
    op: str,
    build: Callable[[], Any],
    replicas: int,
    local: int | None = None,
    on: str = "",
) -> None:
    """Build one strategy, all-reduce 1..replicas through it and emit the verdict; ``on`` prefixes
    its detail (where the replicas ran: :func:`where`)."""
    try:
        strategy = build()
        n = strategy.num_replicas_in_sync
        effective = effective_cross_device_ops(strategy)
        status, detail = judge(allreduce_sums(strategy), replicas, local)
        if n != replicas:
            status, detail = ProbeStatus.WRONG, f"num_replicas_in_sync is {n}, expected {replicas}"
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        status, detail = classify(e)
        effective = ""
    emit(
        "probe",
        strategy=strategy_name,
        cross_device_ops=op,
        replicas=replicas,
        status=status,
        detail=on + detail,
        effective=effective,
    )


def local(device_type: str, replicas: int, gpu_count: int = 0, memory_mib: int = 0) -> None:
    """Every single-process strategy and cross-device op (``-``: none to choose) on ``replicas``
    devices, each built by the builders of every measured cell."""
    platform = platform_of(device_type, replicas, gpu_count, memory_mib)
    _, names = configure_devices(platform, replicas)
    on = where(platform, replicas)
    wanted = local_probes(replicas)
    for name, op in LOCAL_PROBES:
        if (name, op) in wanted:
            cell = Cell(
                strategy=name, replicas=replicas, cross_device_ops=Cell.cross_device_ops if op == "-" else op
            )
            probe(name, op, partial(make_strategy, cell, names), replicas, on=on)


def worker(device_type: str, communication: str, workers: int) -> None:
    """One task of a MultiWorkerMirroredStrategy probe (TF_CONFIG names the cluster, the
    environment's device mask its devices, so ``device_type`` is not needed here). The strategy is
    built before anything else touches TensorFlow's context: collectives must be configured at
    program start-up."""
    cell = Cell(strategy=WORKER_PROBE_STRATEGY, communication=communication, workers=workers)
    probe(
        WORKER_PROBE_STRATEGY,
        communication,
        lambda: make_strategy(cell, [], collective_timeout_s=PROBE_COLLECTIVE_TIMEOUT_S),
        workers,
        local=1,
    )


def main(argv: list[str]) -> int:
    mode, device_type, count, *rest = argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    {
        "facts": lambda: facts(device_type, int(count)),
        "local": lambda: local(device_type, int(count), *map(int, rest[:2])),
        "worker": lambda: worker(device_type, rest[0], int(count)),
    }[mode]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
