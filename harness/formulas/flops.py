"""FLOPs of a training step counted from the ops of its traced graph (pure: the worker hands over
each op's type, shapes and attributes; :mod:`harness.worker.flops` walks the graph).

What is counted is the convention of the MNIST models' analytic count (:mod:`harness.spec.models`):
the multiply-adds of matrix products and convolutions, 2 FLOPs each, in the forward pass and in
the backward pass (weight gradients, and input gradients where the step needs them: a graph's
first layer has none, since nothing asks for the gradient of the input). Biases, activations,
normalization, pooling, the loss, casts and the optimizer update are not counted. One op counts
``2 x (number of multiply-adds)``, from its static shapes:

- ``MatMul``, ``BatchMatMul*``: output elements x the contracted dimension;
- ``Conv2D``/``Conv3D``: output elements x the filter's window x input channels per group;
  their ``BackpropInput``: the incoming gradient's elements x the same; ``BackpropFilter``: the
  incoming gradient's elements x the filter's window and input channels;
- ``DepthwiseConv2dNative`` and its two backprops: the output's (or incoming gradient's)
  elements x the window;
- ``Einsum`` of two operands: the product of the sizes of every index in its equation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

Shape = tuple[int, ...]


@dataclass(frozen=True)
class OpShapes:
    """One op of a graph: its type, its inputs' and outputs' static shapes (None where not fully
    known) and the attributes a count needs (``transpose_a``, ``adj_x``, ``equation``)."""

    type: str
    inputs: tuple[Shape | None, ...]
    outputs: tuple[Shape | None, ...]
    attrs: Mapping[str, object] = field(default_factory=dict)


def _n(shape: Shape) -> int:
    return math.prod(shape)


def _matmul(op: OpShapes) -> int:
    a, out = op.inputs[0], op.outputs[0]
    assert a is not None and out is not None
    k = a[0] if op.attrs.get("transpose_a") else a[1]
    return 2 * _n(out) * k


def _batch_matmul(op: OpShapes) -> int:
    a, out = op.inputs[0], op.outputs[0]
    assert a is not None and out is not None
    k = a[-2] if op.attrs.get("adj_x") else a[-1]
    return 2 * _n(out) * k


def _conv(op: OpShapes) -> int:
    """Forward: output elements x window x input channels per group (the filter's all but last)."""
    out, kernel = op.outputs[0], op.inputs[1]
    assert out is not None and kernel is not None
    return 2 * _n(out) * _n(kernel[:-1])


def _conv_backprop_input(op: OpShapes) -> int:
    kernel, grad = op.inputs[1], op.inputs[2]
    assert kernel is not None and grad is not None
    return 2 * _n(grad) * _n(kernel[:-1])


def _conv_backprop_filter(op: OpShapes) -> int:
    kernel, grad = op.outputs[0], op.inputs[2]
    assert kernel is not None and grad is not None
    return 2 * _n(grad) * _n(kernel[:-1])


def _depthwise(op: OpShapes) -> int:
    out, kernel = op.outputs[0], op.inputs[1]
    assert out is not None and kernel is not None
    return 2 * _n(out) * kernel[0] * kernel[1]


def _depthwise_backprop_input(op: OpShapes) -> int:
    kernel, grad = op.inputs[1], op.inputs[2]
    assert kernel is not None and grad is not None
    return 2 * _n(grad) * kernel[0] * kernel[1]


def _depthwise_backprop_filter(op: OpShapes) -> int:
    kernel, grad = op.outputs[0], op.inputs[2]
    assert kernel is not None and grad is not None
    return 2 * _n(grad) * kernel[0] * kernel[1]


def einsum_sizes(equation: str, shapes: Iterable[Shape]) -> dict[str, int]:
    """Each index letter of an einsum equation and its size, from the operands' shapes; an
    ellipsis stands for the leading dimensions an operand has beyond its letters."""
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for spec, shape in zip(inputs, shapes, strict=True):
        letters = spec.replace("...", "")
        extra = len(shape) - len(letters)
        named = [f"...{i}" for i in range(extra)] if "..." in spec else []
        head, _, tail = spec.partition("...")
        for name, size in zip([*head, *named, *tail] if "..." in spec else list(spec), shape, strict=True):
            sizes[name] = max(sizes.get(name, 1), size)
    return sizes


def _einsum(op: OpShapes) -> int:
    if len(op.inputs) != 2:  # one operand: a transpose or a reduction, no multiply-add
        return 0
    shapes = [s for s in op.inputs if s is not None]
    return 2 * math.prod(einsum_sizes(str(op.attrs["equation"]), shapes).values())


COUNTED: dict[str, Callable[[OpShapes], int]] = {
    "MatMul": _matmul,
    "BatchMatMul": _batch_matmul,
    "BatchMatMulV2": _batch_matmul,
    "BatchMatMulV3": _batch_matmul,
    "Conv2D": _conv,
    "Conv3D": _conv,
    "Conv2DBackpropInput": _conv_backprop_input,
    "Conv2DBackpropFilter": _conv_backprop_filter,
    "Conv3DBackpropInputV2": _conv_backprop_input,
    "Conv3DBackpropFilterV2": _conv_backprop_filter,
    "DepthwiseConv2dNative": _depthwise,
    "DepthwiseConv2dNativeBackpropInput": _depthwise_backprop_input,
    "DepthwiseConv2dNativeBackpropFilter": _depthwise_backprop_filter,
    "Einsum": _einsum,
}
"""Op type -> its FLOPs (2 x multiply-adds) from its shapes: the matrix products and convolutions."""


@dataclass(frozen=True)
class FlopCount:
    """A graph's counted FLOPs, by op type, and the counted ops whose shapes were not known (their
    FLOPs are missing from the total)."""

    total: int
    by_type: dict[str, int]
    unknown: tuple[str, ...] = ()


def count(ops: Iterable[OpShapes]) -> FlopCount:
    """The FLOPs of ``ops`` (:data:`COUNTED`; every other op counts 0)."""
    by_type: dict[str, int] = {}
    unknown: list[str] = []
    for op in ops:
        formula = COUNTED.get(op.type)
        if formula is None:
            continue
        if any(s is None for s in (*op.inputs, *op.outputs[:1])):
            unknown.append(op.type)
            continue
        by_type[op.type] = by_type.get(op.type, 0) + formula(op)
    return FlopCount(sum(by_type.values()), by_type, tuple(unknown))
