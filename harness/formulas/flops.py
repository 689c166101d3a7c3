"""FLOPs of a training step counted from the ops of its traced graph (pure: the worker hands over
each op's type, shapes and attributes; :mod:`harness.worker.flops` walks the graph). The convention
is the MNIST models' analytic count's (:mod:`harness.spec.models`): the multiply-adds of matrix
products and convolutions, 2 FLOPs each, forward and backward (weight gradients, and input
gradients where needed: a graph's first layer has none). Biases, activations, normalization,
pooling, the loss, casts and the optimizer update are not counted. One op counts ``2 x
(multiply-adds)``, from its static shapes:

- ``MatMul``, ``BatchMatMul*``: output elements x the contracted dimension;
- ``Conv2D``/``Conv3D``: output elements x the filter's window x input channels per group;
  their ``BackpropInput``: the incoming gradient's elements x the same; ``BackpropFilter``: the
  incoming gradient's elements x the filter's window and input channels;
- ``DepthwiseConv2dNative`` and its two backprops: the output's (or incoming gradient's)
  elements x the window;
- ``Einsum`` of two operands: the product of the sizes of every index in its equation."""

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


def _known(shape: Shape | None) -> Shape:
    assert shape is not None  # count() skips the ops with an unknown shape
    return shape


def _matmul(op: OpShapes) -> int:
    """``MatMul`` (``transpose_a``) and ``BatchMatMul*`` (``adj_x``): output elements x the
    contracted dimension (the first operand's last, or second-to-last when transposed)."""
    a, out = _known(op.inputs[0]), _known(op.outputs[0])
    k = a[-2] if op.attrs.get("transpose_a") or op.attrs.get("adj_x") else a[-1]
    return 2 * math.prod(out) * k


def _conv(part: str, depthwise: bool = False) -> Callable[[OpShapes], int]:
    """A convolution's count: the elements of its output (``part`` "forward") or of the incoming
    gradient (its third input: "input" and "filter", the backprops) x the filter's window (and
    input channels per group: the filter's all but last, unless ``depthwise``); the filter is its
    second input, or the filter backprop's output."""

    def flops(op: OpShapes) -> int:
        elements = _known(op.outputs[0] if part == "forward" else op.inputs[2])
        kernel = _known(op.outputs[0] if part == "filter" else op.inputs[1])
        return 2 * math.prod(elements) * (kernel[0] * kernel[1] if depthwise else math.prod(kernel[:-1]))

    return flops


def einsum_sizes(equation: str, shapes: Iterable[Shape]) -> dict[str, int]:
    """Each index letter of an einsum equation and its size, from the operands' shapes; an
    ellipsis stands for the leading dimensions an operand has beyond its letters."""
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for spec, shape in zip(inputs, shapes, strict=True):
        head, dots, tail = spec.partition("...")
        named = [f"...{i}" for i in range(len(shape) - len(head) - len(tail))] if dots else []
        for name, size in zip([*head, *named, *tail], shape, strict=True):
            sizes[name] = max(sizes.get(name, 1), size)
    return sizes


def _einsum(op: OpShapes) -> int:
    if len(op.inputs) != 2:  # one operand: a transpose or a reduction, no multiply-add
        return 0
    shapes = [s for s in op.inputs if s is not None]
    return 2 * math.prod(einsum_sizes(str(op.attrs["equation"]), shapes).values())


COUNTED: dict[str, Callable[[OpShapes], int]] = {
    "MatMul": _matmul,
    "BatchMatMul": _matmul,
    "BatchMatMulV2": _matmul,
    "BatchMatMulV3": _matmul,
    "Conv2D": _conv("forward"),
    "Conv3D": _conv("forward"),
    "Conv2DBackpropInput": _conv("input"),
    "Conv2DBackpropFilter": _conv("filter"),
    "Conv3DBackpropInputV2": _conv("input"),
    "Conv3DBackpropFilterV2": _conv("filter"),
    "DepthwiseConv2dNative": _conv("forward", depthwise=True),
    "DepthwiseConv2dNativeBackpropInput": _conv("input", depthwise=True),
    "DepthwiseConv2dNativeBackpropFilter": _conv("filter", depthwise=True),
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
