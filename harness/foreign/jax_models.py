"""The suite's MNIST models in JAX, trained with plain SGD on a fixed pool of synthetic batches.

Layer for layer as :mod:`harness.worker.training.models` builds them in Keras: 3x3 valid convolutions
with ReLU, 2x2 max pooling, NHWC, logits and sparse categorical cross-entropy; kernels Glorot-uniform,
biases zero. FLOPs are counted from the traced update (:func:`count_flops`), not typed in."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from harness.contract.tenant import TenantJob
from harness.foreign.trainer import CLASSES, POOL_BATCHES, ForeignTrainer, no_gpu

INPUT = (28, 28, 1)


def _layers(model: str) -> list[tuple[str, tuple[int, ...]]]:
    """(kind, kernel shape) per layer: conv kernels HWIO, dense kernels (in, out)."""
    if model == "cnn":
        return [
            ("conv", (3, 3, 1, 32)),
            ("pool", ()),
            ("conv", (3, 3, 32, 64)),
            ("pool", ()),
            ("dense", (5 * 5 * 64, CLASSES)),
        ]
    if model == "dense":
        return [("dense", (28 * 28, 128)), ("dense", (128, CLASSES))]
    raise ValueError(f"no JAX version of model {model!r}; expected cnn or dense")


def _glorot(jax: Any, key: Any, shape: tuple[int, ...]) -> Any:
    receptive = math.prod(shape[:-2])  # 1 for a dense kernel
    fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return jax.random.uniform(key, shape, minval=-limit, maxval=limit)


def init(jax: Any, model: str, seed: int) -> list[dict[str, Any]]:
    """The model's parameters: one {"w", "b"} per conv or dense layer."""
    keys = iter(jax.random.split(jax.random.PRNGKey(seed), 8))
    return [
        {"w": _glorot(jax, next(keys), shape), "b": jax.numpy.zeros(shape[-1])}
        for kind, shape in _layers(model)
        if kind != "pool"
    ]


def forward(jax: Any, model: str, params: list[dict[str, Any]], x: Any) -> Any:
    """Logits of a batch ``x`` (N, 28, 28, 1)."""
    lax, jnp = jax.lax, jax.numpy
    it: Iterator[dict[str, Any]] = iter(params)
    layers = _layers(model)
    for i, (kind, _shape) in enumerate(layers):
        if kind == "pool":
            x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            continue
        p = next(it)
        if kind == "conv":
            x = lax.conv_general_dilated(
                x, p["w"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
        else:
            x = x.reshape(x.shape[0], -1) @ p["w"]
        x = x + p["b"]
        if i < len(layers) - 1:
            x = jax.nn.relu(x)
    return x


def _dot_flops(eqn: Any) -> int:
    lhs = eqn.invars[0].aval.shape
    (contract, _), _batch = eqn.params["dimension_numbers"]
    out = math.prod(eqn.outvars[0].aval.shape)
    return 2 * out * math.prod(lhs[d] for d in contract)


def _taps(
    n: int, lhs_dilation: int, pad_low: int, kernel: int, rhs_dilation: int, stride: int, out: int
) -> int:
    """(output position, kernel position) pairs of one spatial dimension that land on an input
    element, not on padding or a dilation hole: the multiply-adds a convolution really does there."""
    last = (n - 1) * lhs_dilation
    return sum(
        1
        for o in range(out)
        for j in range(kernel)
        if 0 <= (x := o * stride + j * rhs_dilation - pad_low) <= last and x % lhs_dilation == 0
    )


def _conv_flops(eqn: Any) -> int:
    """2 x the multiply-adds that touch input elements, whatever the layout: a gradient's transposed
    convolution, padded to the full size, counts as many as the forward one (TensorFlow's counter
    and the suite's analytic count do the same)."""
    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape, eqn.outvars[0].aval.shape
    dn = p["dimension_numbers"]
    spatial = len(lhs) - 2
    lhs_dil = p.get("lhs_dilation") or (1,) * spatial
    rhs_dil = p.get("rhs_dilation") or (1,) * spatial
    taps = math.prod(
        _taps(
            lhs[dn.lhs_spec[2 + d]],
            lhs_dil[d],
            p["padding"][d][0],
            rhs[dn.rhs_spec[2 + d]],
            rhs_dil[d],
            p["window_strides"][d],
            out[dn.out_spec[2 + d]],
        )
        for d in range(spatial)
    )
    batch, out_features, in_features = out[dn.out_spec[0]], rhs[dn.rhs_spec[0]], rhs[dn.rhs_spec[1]]
    return 2 * batch * taps * in_features * out_features


COUNTED = {"dot_general": _dot_flops, "conv_general_dilated": _conv_flops}


def _sub_jaxprs(value: Any) -> Iterator[Any]:
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):  # a ClosedJaxpr
        yield value.jaxpr
    elif hasattr(value, "eqns"):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)


def jaxpr_flops(jaxpr: Any) -> int:
    """FLOPs of every matrix product and convolution in ``jaxpr`` and the jaxprs it calls."""
    total = 0
    for eqn in jaxpr.eqns:
        count = COUNTED.get(eqn.primitive.name)
        if count is not None:
            total += count(eqn)
        for value in eqn.params.values():
            for sub in _sub_jaxprs(value):
                total += jaxpr_flops(sub)
    return total


def first_device(jax: Any, kind: str) -> Any:
    """JAX's first device of ``kind`` (``gpu`` or ``cpu``); :class:`NoGpu` when a GPU is asked for
    and JAX has none (its GPU plugin failed or is missing: JAX then runs on the CPU)."""
    if kind != "gpu":
        return jax.devices("cpu")[0]
    try:
        return jax.devices("gpu")[0]
    except RuntimeError as e:
        raise no_gpu("jax", str(e)) from e


class JaxTrainer(ForeignTrainer):
    """One SGD update per :meth:`step`, jitted, its loss waited for (so a step's time is its work)."""

    def __init__(self, job: TenantJob) -> None:
        import jax

        self.jax, self.job = jax, job
        self.device = first_device(jax, job.device)
        self.platform = "gpu" if self.device.platform in ("gpu", "cuda", "rocm") else "cpu"
        self.version = jax.__version__
        model, lr = job.model, job.learning_rate

        def loss_fn(params: Any, x: Any, y: Any) -> Any:
            logits = forward(jax, model, params, x)
            picked = jax.numpy.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)
            return -picked.mean()

        def update(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

        self._grad = jax.value_and_grad(loss_fn)
        self._jitted = jax.jit(update, donate_argnums=0)
        with jax.default_device(self.device):
            kx, ky = jax.random.split(jax.random.PRNGKey(job.seed + 1))
            self.xs = jax.random.uniform(kx, (POOL_BATCHES, job.batch, *INPUT))
            self.ys = jax.random.randint(ky, (POOL_BATCHES, job.batch), 0, CLASSES)
            self.params = init(jax, model, job.seed)

    def _update(self, batch: int) -> Any:
        self.params, loss = self._jitted(self.params, self.xs[batch], self.ys[batch])
        return loss.block_until_ready()

    def device_name(self) -> str:
        return f"{self.device.platform}:{self.device.id} {getattr(self.device, 'device_kind', '')}".strip()

    def flops_per_example(self) -> int:
        jaxpr = self.jax.make_jaxpr(self._grad)(self.params, self.xs[0], self.ys[0])
        return jaxpr_flops(jaxpr.jaxpr) // self.job.batch
