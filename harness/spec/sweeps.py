"""Named sweeps, as data. ``SWEEPS[name]`` is a :class:`harness.spec.Sweep`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.errors import HarnessError
from harness.spec.axes import (
    COMMUNICATION_NAMES,
    CROSS_DEVICE_OPS_NAMES,
    REPLICAS_TO_DEVICES,
    REPLICAS_TO_MAX,
)
from harness.spec.protocol import Protocol
from harness.spec.sweep import Sweep, chain, make_sweep, with_headline

USUAL_AXES: dict[str, tuple[object, ...]] = {
    "model": ("cnn", "dense"),
    "batch": (64,),
    "steps_per_execution": (10,),
}
"""The axes most grids here share, each stated in the grid: both built-in models, batch 64 per
replica, 10 steps per call (:func:`_grid` fills them in unless told otherwise)."""


def _grid(**axes: Sequence[object]) -> Sweep:
    """A one-grid unnamed sweep (:func:`make_sweep`): ``axes``, and :data:`USUAL_AXES` for the
    axes it leaves out."""
    return make_sweep("", "", None, **{**USUAL_AXES, **axes})


def _dense(**axes: Sequence[object]) -> Sweep:
    """:func:`_grid` of the dense model, and ``axes``."""
    return _grid(model=("dense",), **axes)


def _dense_mirrored_2(**axes: Sequence[object]) -> Sweep:
    """:func:`_dense` under mirrored on 2 replicas at batch 32, and ``axes``."""
    return _dense(strategy=("mirrored",), replicas=(2,), batch=(32,), **axes)


SMOKE_PROTOCOL = Protocol(
    repeats=3,
    window_s=0.2,
    min_window_steps=5,
    cell_timeout_s=180.0,
    processes=2,
    max_processes=2,
    blocks=3,
    budget_min=3.0,
)
"""Seconds per cell: two processes each, enough to exercise every path; CIs from two processes
(Student t with one degree of freedom) are wide by design."""

SMOKE = chain(
    "smoke",
    "a few seconds per cell, two processes each: both models, default and mirrored on 1 and 2 replicas; "
    "the fit loop and accumulation on mirrored",
    SMOKE_PROTOCOL,
    _grid(
        strategy=("default", "mirrored"),
        cross_device_ops=("auto", "nccl"),
        replicas=(1, 2),
        batch=(32,),
        steps_per_execution=(5,),
    ),
    _dense_mirrored_2(loop=("ctl",), accum_steps=(2,), steps_per_execution=(5,)),
    _dense_mirrored_2(loop=("fit",), accum_steps=(1, 2), steps_per_execution=(1,)),
)

_ALL_REDUCES = _grid(strategy=("mirrored",), cross_device_ops=CROSS_DEVICE_OPS_NAMES, replicas=(2,))
"""Mirrored's cross-device ops on 2 replicas (shared by ``default`` on a CPU and on a GPU)."""
_PARAMETER_SERVER = _grid(strategy=("parameter_server",), workers=(1, 2), ps=(1,))
"""The parameter server on 1 and 2 local workers, one ps (shared by ``default`` and ``cluster``)."""
_WORKERS = (
    _grid(strategy=("multi_worker_mirrored",), communication=("ring",), workers=(1, 2)),
    _PARAMETER_SERVER,
)
"""MultiWorkerMirrored and the parameter server on 1 and 2 local workers."""
_COTENANTS = _grid(strategy=("default",), tenants=(2,))
"""What sharing the devices costs: two co-tenant processes, against the tenants-1 default cell."""
_FIT = _grid(strategy=("default",), loop=("fit",))
"""Keras fit on the default strategy (a contender on a CPU and on a GPU)."""
_BIG_BATCH = _grid(strategy=("default", "mirrored"), replicas=(1, 2), batch=(256,))
"""What a bigger batch buys: default, and mirrored on 1 and 2 replicas, at batch 256 per replica."""

DEFAULT = with_headline(
    chain(
        "default",
        "what `nox -s bench` runs (budget 13 min, 4 blocks per instance): first, for each model, "
        "the configurations a user chooses between, live together, each against the fastest of "
        "them: default with the custom loop, with fit and with 4 accumulation steps, mirrored on 1 "
        "and 2 replicas, central_storage on 2, multi_worker_mirrored (ring) on 2 local workers; "
        "then what else a second replica or worker costs or buys: mirrored's other cross-device "
        "ops, multi_worker_mirrored and parameter server on 1 and 2 workers, "
        f"{' and '.join(map(str, _BIG_BATCH.values()['strategy']))} at batch {_BIG_BATCH.values()['batch'][0]}, "
        "one_device, two co-tenant processes of default. Batch 64 per replica, steps_per_execution 10",
        # the step breakdown of the answer's cells alone (each model's leader and closest rival):
        # every cell's cost a quarter of the run (207 of 860 s on 2 cores, 2026-11-26)
        Protocol(repeats=3, window_s=0.5, budget_min=13.0, blocks=4, breakdown=False, breakdown_named=True),
        _ALL_REDUCES,
        *_WORKERS,
        _BIG_BATCH,
        _grid(strategy=("one_device",)),
        _COTENANTS,
    ),
    _grid(strategy=("default",), accum_steps=(1, 4), loop=("ctl",)),
    _FIT,
    _grid(strategy=("mirrored",), replicas=(1, 2)),
    _grid(strategy=("central_storage",), replicas=(2,)),
    _grid(strategy=("multi_worker_mirrored",), communication=("ring",), workers=(2,)),
)

DEFAULT = dataclasses.replace(
    DEFAULT,
    # a CPU with bfloat16 units (Platform.cpu_bf16): the plain loop and 4 accumulation steps in
    # mixed bfloat16 join the race (1.84x float32 on the CNN on an AMX Xeon, 2026-12-06)
    on_bf16=_grid(
        strategy=("default",), accum_steps=(1, 4), loop=("ctl",), precision=("mixed_bfloat16",)
    ).grids,
    on_gpu=with_headline(
        chain(
            "default",
            "on a GPU host: first, for each model, the configurations a GPU user chooses between, "
            "live together, each against the fastest of them: the plain custom loop at batch 64 and "
            "256 per replica, mixed_float16, XLA, Keras fit, MirroredStrategy on 1, 2, 4, ... whole "
            "GPUs; then what else several GPUs or a shared one cost: mirrored's cross-device ops on 2 "
            "replicas (logical GPUs on a 1-GPU host: a probe of all-reduce cost, not a choice), "
            "multi_worker_mirrored and parameter server on 1 and 2 workers, two co-tenant processes "
            "of default. steps_per_execution 10",
            DEFAULT.protocol,
            _ALL_REDUCES,
            *_WORKERS,
            _COTENANTS,
        ),
        # each model's plain custom loop and its batch 256, mixed precision, XLA, Keras fit
        _grid(strategy=("default",), batch=(64, 256)),
        _grid(strategy=("default",), precision=("mixed_float16",)),
        _grid(strategy=("default",), xla=("on",)),
        _FIT,
        # MirroredStrategy on 1, 2, 4, ... whole GPUs: never on logical ones
        _grid(strategy=("mirrored",), replicas=(REPLICAS_TO_DEVICES,)),
    ),
)
"""``default`` on a GPU host (:attr:`Sweep.on_gpu`): the same two models and protocol."""

CLUSTER = chain(
    "cluster",
    "MultiWorkerMirroredStrategy with ring and auto collectives on 1 and 2 local worker "
    "processes (TF_CONFIG on 127.0.0.1) and ParameterServerStrategy with 1 and 2 workers and one ps, "
    "both models, against mirrored on 1 and 2 replicas and default, at the same global batch",
    Protocol(),
    _grid(strategy=("default", "mirrored"), replicas=(1, 2)),
    _grid(strategy=("default",), batch=(128,)),
    _grid(strategy=("multi_worker_mirrored",), communication=("ring", "auto"), workers=(1, 2)),
    _PARAMETER_SERVER,
)

SCALING = chain(
    "scaling",
    "mirrored (auto) on every replica count up to the machine's, four batch sizes, weak and strong scaling",
    Protocol(),
    _grid(
        strategy=("mirrored",),
        replicas=(REPLICAS_TO_MAX,),
        batch=(32, 64, 128, 256),
        scaling=("weak", "strong"),
    ),
)


def _same_update_batch(examples: int, replicas: int, strategies: tuple[str, ...]) -> list[Sweep]:
    """Grids of dense, both loops, one step per call, whose every cell updates on ``examples``
    examples: k micro-batches of examples/k."""
    return [
        _dense(
            strategy=strategies,
            replicas=(replicas,),
            batch=(examples // (replicas * k),),
            accum_steps=(k,),
            loop=("ctl", "fit"),
            steps_per_execution=(1,),
        )
        for k in (1, 2, 4)
    ]


EQUIVALENCE = chain(
    "equivalence",
    "cells that must train identically, for `verify`: every cell updates on 64 "
    "examples (default and one_device with batch 64/k, mirrored on 2 replicas with 32/k, k = 1, 2, 4 "
    "micro-batches), both loops, mirrored with each CPU cross-device op",
    SMOKE_PROTOCOL,
    *_same_update_batch(64, 1, ("default", "one_device")),
    *_same_update_batch(64, 2, ("mirrored",)),
    _dense_mirrored_2(
        cross_device_ops=("hierarchical_copy", "reduction_to_one_device"),
        loop=("ctl",),
        steps_per_execution=(1,),
    ),
)

VALIDATION = chain(
    "validation",
    "what `predict` is checked against: mirrored (auto) on 1 to 4 replicas (run with "
    "--cpu-devices 4 on a CPU-only machine) and multi_worker_mirrored (ring) on 1 to 4 local workers, "
    "both models, batch 64 per replica, 3 interleaved processes each",
    Protocol(repeats=3, window_s=0.5, budget_min=20.0),
    _grid(strategy=("mirrored",), replicas=(1, 2, 3, 4)),
    _grid(strategy=("multi_worker_mirrored",), communication=("ring",), workers=(1, 2, 3, 4)),
)

COLLECTIVES_PROTOCOL = Protocol(
    repeats=3, window_s=0.1, min_window_steps=1, max_processes=3, peak=False, breakdown=False
)
"""All-reduce timing: 3 processes per topology, 3 windows of ~0.1 s per payload."""


def collectives_sweep(
    replicas: tuple[object, ...] = (2, 3, 4), workers: tuple[object, ...] = (2, 3, 4)
) -> Sweep:
    """The all-reduce topologies: mirrored with every cross-device op on ``replicas`` replicas, and
    multi_worker_mirrored with every communication on ``workers`` local workers (one replica each).
    ``--replicas`` and ``--workers`` set these two lists (each applies to its own strategy)."""
    return chain(
        "collectives",
        "all-reduce alone (a size sweep and each model's gradient set) under every "
        "mirrored cross-device op on 2-4 replicas and every multi_worker_mirrored communication on "
        "2-4 local workers, 3 processes each; rows in results/collectives",
        COLLECTIVES_PROTOCOL,
        _dense(strategy=("mirrored",), cross_device_ops=CROSS_DEVICE_OPS_NAMES, replicas=replicas),
        _dense(strategy=("multi_worker_mirrored",), communication=COMMUNICATION_NAMES, workers=workers),
        kind="collectives",
    )


MODELS_PROTOCOL = dataclasses.replace(SMOKE_PROTOCOL, window_s=0.5, cell_timeout_s=600.0, budget_min=10.0)
"""Real architectures take seconds a step on a CPU: longer windows and deadlines than smoke's."""

MODELS = make_sweep(
    "models",
    "real architectures (harness.spec.models: ResNet-50 and MobileNetV2 on 64x64x3, a Transformer "
    "encoder) under default and mirrored on 1 and 2 replicas, batch 8 per replica, synthetic data",
    MODELS_PROTOCOL,
    model=("resnet50", "mobilenetv2", "transformer"),
    strategy=("default", "mirrored"),
    replicas=(1, 2),
    batch=(8,),
    steps_per_execution=(2,),
)

NIGHTLY = chain(
    "nightly",
    "what `nightly` tracks (budget 15 min, its pairs shared in rounds): both models under default "
    "and mirrored on 2 replicas, batch 64 per replica, steps_per_execution 10",
    Protocol(budget_min=15.0, peak=False, breakdown=False),
    _grid(strategy=("default", "mirrored"), replicas=(2,)),
)

GPU_PROTOCOL = Protocol(budget_min=9.0)
"""One GPU in under 10 minutes, with the step breakdown: on a GPU one profiled window per cell
(:mod:`harness.worker.profile`) saying whether the device, the host or the input is the limit."""

_GPU_CORE: dict[str, tuple[object, ...]] = {
    "strategy": ("default",),
    "batch": (256,),
    "steps_per_execution": (100,),
    "precision": ("float32",),
    "xla": ("off", "on"),
}
"""The gpu sweep's core: batch 256, 100 steps per call, float32, XLA off and on (so every one of
its cells is also an xla comparison)."""

GPU = chain(
    "gpu",
    "one GPU, under 10 minutes: cnn and dense under default and mirrored on 1 and 2 replicas (two "
    "logical GPUs on a one-GPU host), XLA off and on, batch 256 and 4096, steps per execution 1 and "
    "100, float32 and mixed_bfloat16, each against a core at batch 256, 100 steps, float32; "
    "resnet50 (64x64) at the core, in float32 and mixed_bfloat16",
    GPU_PROTOCOL,
    # one knob at a time against the core
    _grid(**{**_GPU_CORE, "strategy": ("default", "mirrored"), "replicas": (1, 2)}),
    _grid(**{**_GPU_CORE, "batch": (4096,)}),
    _grid(**{**_GPU_CORE, "steps_per_execution": (1,)}),
    _grid(**{**_GPU_CORE, "model": ("cnn", "dense", "resnet50"), "precision": ("float32", "mixed_bfloat16")}),
)
"""The knobs that matter on a GPU (XLA, logical replicas, batch, steps per execution, precision),
sparse: each varies alone against a shared core, so a comparison names one knob."""

COLLECTIVES = collectives_sweep()

SWEEPS: dict[str, Sweep] = {
    s.name: s
    for s in (SMOKE, DEFAULT, MODELS, NIGHTLY, SCALING, CLUSTER, EQUIVALENCE, VALIDATION, GPU, COLLECTIVES)
}


def get_sweep(name: str) -> Sweep:
    """The named sweep, or HarnessError naming the accepted names."""
    try:
        return SWEEPS[name]
    except KeyError:
        raise HarnessError(f"Received --sweep={name!r}; expected one of: {', '.join(SWEEPS)}.") from None
