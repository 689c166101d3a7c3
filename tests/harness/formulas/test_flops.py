"""Counting a step's FLOPs from its ops' shapes: 2 FLOPs per multiply-add of every matrix product and
convolution, forward and backward, nothing else."""

from __future__ import annotations

import pytest

from harness.formulas.flops import OpShapes, count, einsum_sizes


def test_matmuls_count_output_elements_times_the_contracted_dimension() -> None:
    plain = OpShapes("MatMul", ((32, 784), (784, 128)), ((32, 128),))
    weight_grad = OpShapes("MatMul", ((32, 784), (32, 128)), ((784, 128),), {"transpose_a": True})
    batched = OpShapes("BatchMatMulV2", ((4, 8, 16, 64), (4, 8, 64, 16)), ((4, 8, 16, 16),))
    adjoint = OpShapes("BatchMatMulV2", ((4, 64, 16), (4, 64, 16)), ((4, 16, 16),), {"adj_x": True})

    found = count([plain, weight_grad, batched, adjoint])

    assert found.by_type == {
        "MatMul": 2 * 2 * 32 * 784 * 128,
        "BatchMatMulV2": 2 * (4 * 8 * 16 * 16 * 64 + 4 * 16 * 16 * 64),
    }


def test_a_convolution_and_its_backprops_count_the_same_multiply_adds() -> None:
    forward = OpShapes("Conv2D", ((8, 13, 13, 32), (3, 3, 32, 64)), ((8, 11, 11, 64),))
    grad_input = OpShapes("Conv2DBackpropInput", ((4,), (3, 3, 32, 64), (8, 11, 11, 64)), ((8, 13, 13, 32),))
    grad_filter = OpShapes(
        "Conv2DBackpropFilter", ((8, 13, 13, 32), (4,), (8, 11, 11, 64)), ((3, 3, 32, 64),)
    )
    macs = 8 * 11 * 11 * 64 * 3 * 3 * 32

    found = count([forward, grad_input, grad_filter])

    assert found.by_type == {
        "Conv2D": 2 * macs,
        "Conv2DBackpropInput": 2 * macs,
        "Conv2DBackpropFilter": 2 * macs,
    }


def test_a_depthwise_convolution_counts_its_window_per_output_element() -> None:
    forward = OpShapes("DepthwiseConv2dNative", ((2, 16, 16, 8), (3, 3, 8, 1)), ((2, 16, 16, 8),))
    grad = OpShapes(
        "DepthwiseConv2dNativeBackpropFilter", ((2, 16, 16, 8), (4,), (2, 16, 16, 8)), ((3, 3, 8, 1),)
    )
    assert count([forward, grad]).total == 2 * (2 * 2 * 16 * 16 * 8 * 9)


@pytest.mark.parametrize(
    "equation, shapes, macs",
    [
        ("abc,cd->abd", [(2, 3, 4), (4, 5)], 2 * 3 * 4 * 5),
        ("aecd,abcd->acbe", [(2, 7, 4, 8), (2, 6, 4, 8)], 2 * 7 * 4 * 8 * 6),
        ("...ij,jk->...ik", [(5, 2, 3, 4), (4, 6)], 5 * 2 * 3 * 4 * 6),
    ],
)
def test_an_einsum_of_two_operands_counts_the_product_of_its_index_sizes(
    equation: str, shapes: list[tuple[int, ...]], macs: int
) -> None:
    op = OpShapes("Einsum", tuple(shapes), ((1,),), {"equation": equation})
    assert count([op]).total == 2 * macs
    assert set(einsum_sizes(equation, shapes)) >= set(
        equation.split("->")[0].replace(",", "").replace(".", "")
    )


def test_other_ops_count_nothing_and_unknown_shapes_are_named() -> None:
    ops = [
        OpShapes("Relu", ((8, 10),), ((8, 10),)),
        OpShapes("BiasAdd", ((8, 10), (10,)), ((8, 10),)),
        OpShapes("MatMul", ((None), (784, 128)), ((None),)),
        OpShapes("Einsum", ((2, 3),), ((3, 2),), {"equation": "ab->ba"}),
    ]
    found = count(ops)
    assert found.total == 0 and found.unknown == ("MatMul",)
