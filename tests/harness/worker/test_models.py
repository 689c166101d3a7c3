"""Tests of harness.models: analytic FLOPs on literal numbers, and the Keras architectures."""

from __future__ import annotations

import pytest

from harness.spec import models
from harness.worker.training.models import MODELS


def test_conv2d_and_dense_flops():
    # 3x3 conv, 1 -> 32 channels on 28x28: output 26x26, 2 * 9 * 1 * 32 * 676 = 389376
    # kernel 3x3x1x32 plus bias 32: 320 parameters
    assert models.conv2d("c", 28, 28, 1, 32, 3) == (models.Layer("c", 389376, 320), 26, 26)
    # 784 -> 128 dense: 2 * 784 * 128 = 200704; kernel 784x128 plus bias 128: 100480 parameters
    assert models.dense("d", 784, 128) == models.Layer("d", 200704, 100480)


def test_cnn_layers():
    # conv32 on 28x28x1 -> 26x26x32: 2 * (3*3*1) * 32 * 26*26     = 389376
    # pool -> 13x13; conv64 -> 11x11x64: 2 * (3*3*32) * 64 * 11*11 = 4460544
    # pool -> 5x5; flatten 5*5*64 = 1600; dense10: 2 * 1600 * 10  = 32000
    assert [(layer.name, layer.forward_flops) for layer in models.cnn_layers()] == [
        ("conv32", 389376),
        ("conv64", 4460544),
        ("dense10", 32000),
    ]


def test_dense_layers():
    # dense128: 2 * 784 * 128 = 200704; dense10: 2 * 128 * 10 = 2560
    assert [(layer.name, layer.forward_flops) for layer in models.dense_layers()] == [
        ("dense128", 200704),
        ("dense10", 2560),
    ]


def test_training_flops():
    # forward + weight gradient for the first layer (2x), plus the input gradient elsewhere (3x)
    # cnn: 2 * 389376 + 3 * (4460544 + 32000) = 778752 + 13477632 = 14256384
    assert models.training_flops(models.cnn_layers()) == 14256384
    # dense: 2 * 200704 + 3 * 2560 = 401408 + 7680 = 409088
    assert models.training_flops(models.dense_layers()) == 409088
    assert models.training_flops([models.Layer("a", 10), models.Layer("b", 1)]) == 23
    assert models.training_flops([]) == 0


def test_registry_names():
    from harness.spec.models import MODELS as INFO

    assert set(MODELS) == set(INFO) == {"cnn", "dense", "resnet50", "mobilenetv2", "transformer"}
    assert {n for n, m in INFO.items() if m.layers is not None} == {"cnn", "dense"}


# Parameters by hand:
#   cnn:   conv32 3*3*1*32 + 32 = 320; conv64 3*3*32*64 + 64 = 18496; dense 1600*10 + 10 = 16010 -> 34826
#   dense: 784*128 + 128 = 100480; 128*10 + 10 = 1290 -> 101770
@pytest.mark.parametrize(
    "name,params,layer_params",
    [
        ("cnn", 34826, [320, 0, 18496, 0, 0, 16010]),
        ("dense", 101770, [0, 100480, 1290]),
    ],
)
@pytest.mark.tf
def test_keras_model_matches_analytic_architecture(name, params, layer_params):
    model = MODELS[name]()
    assert model.name == name
    assert model.count_params() == params
    assert [layer.count_params() for layer in model.layers] == layer_params
    assert tuple(model.input_shape) == (None, *models.INPUT_SHAPE)
    assert tuple(model.output_shape) == (None, models.NUM_CLASSES)
    # the FLOP-bearing Keras layers are exactly the analytic ones, in order
    bearing = [layer for layer in model.layers if layer.count_params()]
    assert len(bearing) == len(models.MODELS[name].layers())


@pytest.mark.tf
def test_cnn_keras_shapes_match_flop_arithmetic():
    model = MODELS["cnn"]()
    shapes = [tuple(layer.output.shape) for layer in model.layers]
    # the output sizes used in cnn_layers(): 26x26x32, 13x13, 11x11x64, 5x5, 1600, 10
    assert shapes == [
        (None, 26, 26, 32),
        (None, 13, 13, 32),
        (None, 11, 11, 64),
        (None, 5, 5, 64),
        (None, 1600),
        (None, 10),
    ]


@pytest.mark.tf
@pytest.mark.parametrize("name", ["cnn", "dense"])
def test_collectives_gradient_shapes_are_the_models_trainable_variables(name):
    from harness.spec.collectives import GRADIENT_SHAPES

    model = MODELS[name]()
    assert tuple(tuple(v.shape) for v in model.trainable_variables) == GRADIENT_SHAPES[name]
