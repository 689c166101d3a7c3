"""The step across nodes' formulas (harness.analysis.scale.scale_out): link settings, the costs' features,
the servers' link bound, the slowest link that pays. No TensorFlow."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from harness.analysis.scale import scale_out
from harness.formulas.across_runs import Side

BASE = Side(6400.0, math.log(6400.0), 1, ())
"""One node: 64 examples in 10 ms."""


def config(strategy: str, cell_id: str = "two") -> scale_out.Config:
    return scale_out.Config(cell_id, "dense", strategy, 64, 400_000, 0.1, BASE, "one")


ZERO = (0.0, 0.0, 0.0)
LINK = scale_out.LinkFit((300e-6, 1.2, 2.0), (ZERO, ZERO, ZERO), 0.0, 10, 6, {}, 0.5e-3)
"""300 us per ring step, 1.2x the wire time, 2 ns per byte handled, 0.5 ms of rest."""


def test_runs_within_25_percent_of_their_median_are_one_setting() -> None:
    settings = scale_out.group_links({"a": 0.94, "b": 1.1, "c": 9.3, "d": 9.1, "e": 25.0, "f": 11.0})
    assert [s.run_ids for s in settings] == [("a", "b"), ("d", "c", "f"), ("e",)]
    assert [s.label for s in settings] == ["1.02 Gbit/s", "9.3 Gbit/s", "25 Gbit/s"]
    # 11 is within 25% of the median of 9.1, 9.3, 11 (9.3); 25 is not of 9.1, 9.3, 11, 25 (10.15)
    assert scale_out.group_links({"a": 1.0, "b": 1.6})[0].run_ids == ("a", "b")  # 1.3 +- 23%
    assert scale_out.group_links({"a": 1.0, "b": 1.8})[0].run_ids == ("a",)  # 1.4 - 29%


def test_a_ring_pays_2_n_minus_1_latencies_and_its_bytes_almost_twice() -> None:
    # 1 GB at 8 Gbit/s: 1 s on the wire, 1 GB handled, once
    assert scale_out.ring(2, 1e9, 8.0) == (2, pytest.approx(1.0), pytest.approx(1.0))
    x1, x2, x3 = scale_out.ring(64, 1e9, 8.0)
    assert x1 == 126 and x2 == pytest.approx(2 * 63 / 64) and x3 == pytest.approx(2 * 63 / 64)
    # two servers: each worker reads and updates half of each one's share
    assert scale_out.served(1e9, 8.0, servers=2) == (1.0, pytest.approx(1.0), pytest.approx(1.0))


def test_the_step_adds_the_links_costs_and_the_rest_to_one_nodes() -> None:
    c = config("multi_worker_mirrored")

    def ring_s(nbytes: float) -> float:  # once over 10 Gbit/s, x kappa, and 2 ns per byte
        return 2 * 300e-6 + nbytes * (1.2 * 8e-9 / 10 + 2e-9)

    step = 0.010 + ring_s(400_000) + 0.1 * ring_s(4) + 0.5e-3
    assert scale_out.step_s(c, LINK, 2, 10.0) == pytest.approx(step)
    assert scale_out.throughput(c, LINK, 2, 10.0) == pytest.approx(128 / step)


def test_the_servers_link_bounds_many_workers() -> None:
    c = config("parameter_server")
    bound = 1e9 / (8 * 1.2 * 400_000) * 64  # updates/s one server's 1 Gbit/s carries, x 64 examples
    assert scale_out.link_bound(c, LINK, 1.0) == pytest.approx(bound)
    assert scale_out.throughput(c, LINK, 64, 1.0) == pytest.approx(bound)
    assert scale_out.throughput(c, LINK, 2, 1.0) < bound
    # 2 nodes: the chief and the server on one, 1 worker on the other
    assert scale_out.throughput(c, LINK, 2, 1.0) == pytest.approx(64 / scale_out.step_s(c, LINK, 2, 1.0))
    assert scale_out.link_bound(config("multi_worker_mirrored"), LINK, 1.0) == math.inf


def test_the_slowest_link_that_pays_solves_two_nodes_against_the_best() -> None:
    c = config("multi_worker_mirrored")
    gbps = scale_out.paying_link(c, LINK, 8000.0)
    assert gbps is not None
    assert scale_out.throughput(c, LINK, 2, gbps) == pytest.approx(8000.0, rel=1e-2)
    assert scale_out.paying_link(c, LINK, 128 / 0.0105) is None  # latency and rest alone exceed it


def test_each_configuration_takes_its_own_rest_and_its_scatter() -> None:
    link = replace(LINK, rests={"two": (1e-3, 2e-3, 3e-3)}, rest_s=0.5e-3)
    assert link.rest("two") == pytest.approx(2e-3)
    assert link.rest("other") == 0.5e-3  # no rows of its own: the mean over configurations
    term = link.rest_term("two", 0.01, runs=3)
    assert term is not None and term.df == 2
    assert term.variance == pytest.approx(1e-6 * (1 / 3 + 1 / 3) / 0.01**2)  # var 1e-6 s^2
    assert link.rest_term("other", 0.01, 1) is None
    wider = scale_out.predict(config("multi_worker_mirrored"), link, 2, 10.0, None, runs=1)
    narrow = scale_out.predict(config("multi_worker_mirrored"), LINK, 2, 10.0, None, runs=1)
    assert wider.high / wider.low > narrow.high / narrow.low
