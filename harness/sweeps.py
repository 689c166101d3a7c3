"""Named sweeps, as data. ``SWEEPS[name]`` is a :class:`harness.spec.Sweep`."""

from __future__ import annotations

from harness.spec import (CROSS_DEVICE_OPS_NAMES, REPLICAS_TO_MAX, STRATEGY_NAMES, Protocol, SpecError,
                          Sweep, make_sweep)

SMOKE = make_sweep(
    "smoke", "a few seconds per cell: both models, default and mirrored on 1 and 2 replicas",
    protocol=Protocol(repeats=3, window_s=0.2, warmup_windows=1, min_window_steps=5,
                      cell_timeout_s=180.0),
    model=("cnn", "dense"), strategy=("default", "mirrored"), cross_device_ops=("auto", "nccl"),
    replicas=(1, 2), batch=(32,), steps_per_execution=(5,),
)

DEFAULT = make_sweep(
    "default", "what `nox -s bench` runs: both models, every single-process strategy and "
    "cross-device op, 1 and 2 replicas, two batch sizes",
    protocol=Protocol(repeats=5, window_s=0.6, warmup_windows=1, min_window_steps=10),
    model=("cnn", "dense"), strategy=STRATEGY_NAMES, cross_device_ops=CROSS_DEVICE_OPS_NAMES,
    replicas=(1, 2), batch=(64, 256), steps_per_execution=(10,),
)

SCALING = make_sweep(
    "scaling", "mirrored (auto) on every replica count up to the machine's, four batch sizes, weak "
    "and strong scaling",
    protocol=Protocol(repeats=5, window_s=1.0, warmup_windows=1, min_window_steps=10),
    model=("cnn", "dense"), strategy=("mirrored",), replicas=(REPLICAS_TO_MAX,),
    batch=(32, 64, 128, 256), scaling=("weak", "strong"), steps_per_execution=(10,),
)

SWEEPS: dict[str, Sweep] = {s.name: s for s in (SMOKE, DEFAULT, SCALING)}


def get_sweep(name: str) -> Sweep:
    """The named sweep, or SpecError naming the accepted names."""
    try:
        return SWEEPS[name]
    except KeyError:
        raise SpecError(f"Received --sweep={name!r}; expected one of: {', '.join(SWEEPS)}.") from None
