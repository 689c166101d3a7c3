"""Misconfiguration diagnosis: "why is only one device busy?", answered in words. :func:`diagnose`
takes a strategy, a Keras model and optimizer and says which of them was built outside
``strategy.scope()``, whether the variables are really mirrored, and whether every replica device
did work (on GPUs: :func:`idle_gpus`); what each check looks at: docs/explanation/accumulation.md,
"Misconfiguration diagnosis". The integrity check runs it after every cell
(:mod:`harness.worker.checks.integrity`): such a cell is ``invalid``, with no throughput. Imports
TensorFlow lazily."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.spec.strategies import STRATEGIES, Variables
from harness.worker.devices import short_name

Test = Callable[[Any], bool]


def expected_variables(strategy_name: str, replicas: int) -> tuple[str, Test] | None:
    """(label, test) for the variables the strategy creates (its descriptor's ``variables``); None
    where any variable will do (single-device strategies, and central storage on one device, which
    then makes plain ones)."""
    import tensorflow as tf
    from tensorflow.python.distribute import ps_values

    kind = STRATEGIES[strategy_name].variables
    if kind == Variables.MIRRORED:
        mirrored = tf.distribute.DistributedValues
        return "MirroredVariable (DistributedValues)", lambda v: isinstance(v, mirrored)
    if kind == Variables.AGGREGATING and replicas > 1:
        return "AggregatingVariable", lambda v: isinstance(v, ps_values.AggregatingVariable)
    if kind == Variables.ON_PS:
        return "placed on a ps task", lambda v: "/job:ps/" in v.device
    return None


def tf_variable(v: Any) -> Any:
    """The tf.Variable behind a Keras 3 variable (``.value``), or ``v`` itself."""
    return getattr(v, "value", v)


def _outside(owner: str, variables: Sequence[Any], ok: Test) -> tuple[int, str] | None:
    """(count, example) of ``variables`` that fail ``ok``; None when all pass."""
    wrong = [v for v in variables if not ok(tf_variable(v))]
    if not wrong:
        return None
    v = wrong[0]
    return len(wrong), f"{owner} variable {v.path} is {type(tf_variable(v)).__name__}"


def scope_problems(strategy_name: str, replicas: int, model: Any, optimizer: Any) -> list[str]:
    """Which of model and optimizer was built outside ``strategy.scope()``, in one sentence each
    (or one sentence naming both). The optimizer's ``iterations`` counter is made when the optimizer
    is constructed, so an optimizer built outside the scope is caught before it trains."""
    expected = expected_variables(strategy_name, replicas)
    if expected is None:
        return []
    label, ok = expected
    opt_vars = list(optimizer.variables) or [optimizer.iterations]
    model_bad = _outside("model", list(model.weights), ok)
    opt_bad = _outside("optimizer", opt_vars, ok)
    fix = "build it inside `with strategy.scope():`"
    if model_bad and opt_bad:
        return [
            (
                f"both the model and the optimizer were built outside strategy.scope(): "
                f"{model_bad[0]} of {len(model.weights)} model and {opt_bad[0]} of "
                f"{len(opt_vars)} optimizer variables are not {label} (e.g. {model_bad[1]}; "
                f"{opt_bad[1]}); build both inside `with strategy.scope():`"
            )
        ]
    found = (
        ("model", model_bad, len(model.weights), f", so it trains on one device; {fix}"),
        ("optimizer", opt_bad, len(opt_vars), f"; {fix} (also `compile(optimizer=...)`)"),
    )
    return [
        f"the {owner} was built outside strategy.scope(): {bad[0]} of {total} {owner} variables are "
        f"not {label} (e.g. {bad[1]}){then}"
        for owner, bad, total, then in found
        if bad
    ]


def mirroring_problems(strategy: Any, model: Any, devices: Sequence[str]) -> list[str]:
    """Each model variable must have one copy per replica device (``devices``: the strategy's
    replica devices), each on its own device."""
    want = {short_name(d) for d in devices}
    for v in model.weights:
        copies = strategy.experimental_local_results(tf_variable(v))
        places = [short_name(c.device) for c in copies]
        if len(copies) != len(devices) or set(places) != want:
            return [
                (
                    f"model variable {v.path} has {len(copies)} copies on "
                    f"{sorted(set(places))}; expected one on each of {sorted(want)}"
                )
            ]
    return []


def variable_bytes(variables: Sequence[Any]) -> int:
    """Bytes one replica's copy of ``variables`` holds (Keras or tf variables)."""
    return sum(int(np.prod(tf_variable(v).shape)) * tf_variable(v).dtype.size for v in variables)


def idle_gpus(peaks: dict[str, int | None], resident_bytes: int, gradient_bytes: int) -> list[str]:
    """Replica GPUs that did no training work, from each one's peak allocated bytes.

    Mirrored variables alone put ``resident_bytes`` (model and optimizer variables) on every
    replica GPU, so a non-zero peak proves nothing. A replica that trained also held its
    gradients (``gradient_bytes``, one per trainable variable) and its activations at once; a
    peak below resident + half the gradients means it never ran a step. None: no figure."""
    threshold = resident_bytes + gradient_bytes // 2
    return [
        f"{d} did no work: its peak memory {peak} B is no more than its variables' "
        f"{resident_bytes} B (a training step adds gradients of {gradient_bytes} B and "
        "activations)"
        for d, peak in peaks.items()
        if peak is not None and peak <= threshold
    ]


def idle_replica_problems(
    strategy: Any, devices: Sequence[str], model: Any = None, optimizer: Any = None
) -> list[str]:
    """Run a small matmul on every replica, eagerly (a tf.function would hand every output back on
    its host device); each result must come back from its replica's device. On GPUs, after
    training, each replica GPU's peak memory must exceed what its variables take
    (:func:`idle_gpus`)."""
    import tensorflow as tf

    def fn() -> Any:
        x = tf.ones((8, 8))
        return tf.matmul(x, x)

    got = [short_name(t.device) for t in strategy.experimental_local_results(strategy.run(fn))]
    want = [short_name(d) for d in devices]
    out = []
    missing = sorted(set(want) - set(got))
    if missing:
        out.append(
            f"replica device(s) {', '.join(missing)} did no work: the per-replica results "
            f"came from {sorted(set(got))}"
        )
    gpus = [short_name(d) for d in devices if "GPU" in d.upper()]
    if gpus and model is not None:
        peaks = {d: _peak_bytes(d) for d in gpus}
        resident = variable_bytes(list(model.weights) + list(getattr(optimizer, "variables", [])))
        out += idle_gpus(peaks, resident, variable_bytes(model.trainable_weights))
    return out


def _peak_bytes(device: str) -> int | None:
    import tensorflow as tf

    try:
        return int(tf.config.experimental.get_memory_info(device)["peak"])
    except (ValueError, tf.errors.OpError):
        return None


def diagnose(strategy: Any, strategy_name: str, model: Any, optimizer: Any, replicas: int) -> list[str]:
    """Every misconfiguration found, in words (empty when none): scope, mirroring, idle replicas.
    ``replicas``: replicas in sync the cell asked for."""
    problems = scope_problems(strategy_name, replicas, model, optimizer)
    if STRATEGIES[strategy_name].variables == Variables.MIRRORED and not problems:
        devices = list(strategy.extended.worker_devices)
        problems += mirroring_problems(strategy, model, devices)
        problems += idle_replica_problems(strategy, devices, model, optimizer)
    return problems
