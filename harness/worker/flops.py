"""A model's training FLOPs counted from its traced step (:mod:`harness.formulas.flops` says what
is counted), its trainable parameters and the bytes of its gradients, measured in the worker. What
is traced (one replica's forward and backward pass on one micro-batch, only the ops the gradients
depend on): docs/explanation/mfu.md, "FLOPs are counted, not typed in"."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from harness.formulas.flops import OpShapes, count
from harness.results.measurement import StepFlops
from harness.spec.cell import Cell
from harness.spec.models import chosen_loss
from harness.worker.training.loops import ReductionCounter, make_gradients, output_units

ATTRS = ("transpose_a", "transpose_b", "adj_x", "adj_y", "equation")
"""The op attributes a count reads (:class:`harness.formulas.flops.OpShapes`)."""


def _shape(tensor: Any) -> tuple[int, ...] | None:
    shape = tensor.shape
    return tuple(shape.as_list()) if shape.is_fully_defined() else None


def _attrs(op: Any) -> dict[str, object]:
    found: dict[str, object] = {}
    for name in ATTRS:
        try:
            value = op.get_attr(name)
        except ValueError:
            continue
        found[name] = value.decode() if isinstance(value, bytes) else value
    return found


def needed_ops(outputs: list[Any]) -> list[Any]:
    """The ops of a graph that ``outputs`` depend on (through data and control edges)."""
    seen: dict[str, Any] = {}
    stack = [t.op for t in outputs]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen[op.name] = op
        stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return list(seen.values())


NESTED = ("PartitionedCall", "StatefulPartitionedCall", "While", "StatelessWhile", "If", "StatelessIf")
"""Ops whose bodies are functions of their own: their FLOPs are not in the count."""


def count_step(
    build: Callable[[], Any], cell: Cell, input_shape: tuple[int, ...], input_dtype: str = "float32"
) -> StepFlops:
    """``flops_per_example`` (training FLOPs of one example), ``trainable_parameters``,
    ``gradient_bytes`` (the gradients an update all-reduces) and ``flops_note`` (what the count
    could not see, "" when nothing) of the model ``build`` makes, on ``input_shape`` examples of
    ``input_dtype``."""
    import keras
    import tensorflow as tf

    model = build()
    batch = cell.per_replica_batch
    one = dataclasses.replace(cell, accum_steps=1)
    gradients = make_gradients(model, keras.optimizers.SGD(), one, ReductionCounter())
    step = tf.function(lambda x, y: gradients(x, y)[1], autograph=False)
    units = output_units(model)
    labels = (
        tf.TensorSpec([batch], tf.int32)
        if chosen_loss(cell.loss, units) == "sparse_categorical_crossentropy"
        else tf.TensorSpec([batch, units], tf.float32)
    )
    concrete = step.get_concrete_function(tf.TensorSpec([batch, *input_shape], input_dtype), labels)
    ops = [  # every op the step's outputs depend on, as shapes and attributes
        OpShapes(op.type, tuple(map(_shape, op.inputs)), tuple(map(_shape, op.outputs)), _attrs(op))
        for op in needed_ops(list(concrete.outputs))
    ]
    found = count(ops)
    nested = sorted({op.type for op in ops if op.type in NESTED})
    missing = [*found.unknown, *nested]
    variables = model.trainable_variables
    return {
        "flops_per_example": found.total / batch,
        "trainable_parameters": sum(int(v.shape.num_elements()) for v in variables),
        "gradient_bytes": sum(int(v.shape.num_elements()) * tf.as_dtype(v.dtype).size for v in variables),
        "flops_note": (
            f"not counted: {', '.join(missing)} (shapes unknown or a nested function)" if missing else ""
        ),
    }
