"""The cells table's co-tenant groups: tenants of one framework sharing the devices
(:class:`Tenancy`) and a co-tenant from another framework (:class:`Foreign`). Pure: no pyarrow, no
pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import CI, Col, Estimate

_OVER_PROCESSES = CI("Lower end of its 95% CI: Student t over the processes (instances), log scale.")
"""The CI of a co-tenant figure that is a median over processes."""


@dataclass(frozen=True, kw_only=True)
class Tenancy:
    """Co-tenants: each tenant's share and the co-tenancy ratio."""

    tenant_examples_per_sec_min: Annotated[
        float | None,
        Col(
            "examples/s",
            "Co-tenancy: the slowest tenant's throughput over the span where every tenant was timing, "
            "median over processes (equals examples_per_sec with one tenant).",
            figure=True,
            median=True,
        ),
    ] = None
    tenant_examples_per_sec_max: Annotated[
        float | None,
        Col(
            "examples/s",
            "Co-tenancy: the fastest tenant's throughput over that span, median over processes.",
            figure=True,
            median=True,
        ),
    ] = None
    tenant_share_min: Annotated[
        float | None,
        Col(
            "1",
            "Co-tenancy: the slowest tenant's throughput / the aggregate (1/tenants is a fair split; "
            "1.0 with one tenant). The aggregate examples_per_sec of a co-tenant process is the sum of "
            "each tenant's examples / seconds over its windows wholly inside the span where every "
            "tenant was timing.",
            figure=True,
            median=True,
        ),
    ] = None
    cotenancy_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "Aggregate examples_per_sec with this many tenants / examples_per_sec of the same cell "
            "alone (tenants 1) in the same run: 1.0 means sharing the devices costs nothing in "
            "aggregate; per tenant it is cotenancy_ratio / tenants. Null with one tenant or without "
            "that row.",
            figure=True,
        ),
        CI("Lower end of its 95% CI (Welch's t on the log process figures of both cells)."),
    ] = Estimate()


@dataclass(frozen=True, kw_only=True)
class Foreign:
    """A co-tenant from another framework (JAX, PyTorch): both sides alone and together."""

    tenant_framework_version: Annotated[
        str | None, Col("", "The co-tenant's framework and its version, e.g. jax 0.10.2.")
    ] = None
    tenant_device: Annotated[
        str | None, Col("", "The device the co-tenant trained on, as its framework names it.")
    ] = None
    tenant_flops_per_example: Annotated[
        int | None,
        Col(
            "FLOPs",
            "Training FLOPs per example counted from the co-tenant's own traced update (2 per multiply-add"
            " of every matrix product and convolution, as flops_per_example); tenant_flops_note compares them.",
        ),
    ] = None
    tenant_flops_note: Annotated[
        str | None,
        Col("", "Whether the co-tenant's count equals the TensorFlow side's (it must: the same model)."),
    ] = None
    alone_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "With a co-tenant from another framework: the TensorFlow side's throughput in its turns alone, "
            "median over its turns in each process, then median over processes.",
            figure=True,
        ),
        _OVER_PROCESSES,
    ] = Estimate()
    tenant_alone_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "The co-tenant's throughput in its turns alone (as alone_examples_per_sec).",
            figure=True,
        ),
        _OVER_PROCESSES,
    ] = Estimate()
    tenant_together_examples_per_sec: Annotated[
        Estimate,
        Col(
            "examples/s",
            "The co-tenant's throughput while the TensorFlow side timed its own window in the same turn: "
            "its whole steps that ended before the TensorFlow window did.",
            figure=True,
        ),
        _OVER_PROCESSES,
    ] = Estimate()
    shared_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "The TensorFlow side's throughput together / alone, measured in turns of the same processes "
            "(relation shared in the ratios table): the share of its speed it keeps beside the co-tenant.",
            figure=True,
        ),
        CI("Lower end of its 95% CI: Student t over instances of the blocks' mean log ratio."),
    ] = Estimate()
    tenant_shared_ratio: Annotated[
        Estimate,
        Col("1", "The co-tenant's throughput together / alone, as shared_ratio.", figure=True),
        CI("Lower end of its 95% CI: as shared_ratio's."),
    ] = Estimate()
    interference_ratio: Annotated[
        Estimate,
        Col(
            "1",
            "shared_ratio + tenant_shared_ratio per process, median over processes: what both sides "
            "train together relative to taking turns with the device. 1.0: sharing is as good as "
            "time-slicing; above 1 each fills the other's idle time; below 1 they contend (caches, "
            "memory bandwidth, threads).",
            figure=True,
        ),
        _OVER_PROCESSES,
    ] = Estimate()
