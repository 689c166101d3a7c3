"""predict's 95% interval (harness.analysis.scale.scaling.predictions): what widens it, the parts the
baseline and the fit carry, and the leave-one-out rule of the model's own error. Rows built like a
run's (tests/harness/analysis/scale/test_links.py). No TensorFlow."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from harness.analysis.scale import scaling
from harness.contract.columns import Estimate
from harness.contract.records import CellRow
from harness.formulas.stats import t_quantile
from tests.harness.analysis.scale.test_links import MWMS, ONE, row

ALPHA_S = 50e-6
"""The planted alpha of the collectives rows: 50 us per ring step."""


def collectives(strategy: str = "multi_worker_mirrored", op: str = "ring") -> pd.DataFrame:
    """All-reduce times on the baseline's machine at 2 and 3 devices: alpha 50 us, 1 ns/B."""
    return pd.DataFrame(
        [
            {
                "status": "ok",
                "strategy": strategy,
                "op": op,
                "devices": n,
                "payload": "bytes",
                "bytes": m,
                "time_s": 2 * (n - 1) * ALPHA_S + 2 * (n - 1) / n * m * 1e-9,
                "timestamp": "2026-12-01T00:00:00",
                "machine_id": None,
                "device_kind": "CPU",
                "device_name": "Xeon",
                "host_cores": 8,
            }
            for n in (2, 3)
            for m in (4096, 2**20)
        ]
    )


def base(ci: float = 0.05, eps: float = 6400.0) -> CellRow:
    """The one-node 1-worker row: ``eps`` examples/s, CI exp(+-ci) over 3 processes (2 df)."""
    r = row(ONE, "local", eps, nodes=1, day=1)
    return replace(
        r,
        examples_per_sec=Estimate(eps, eps * math.exp(-ci), eps * math.exp(ci)),
        spread=replace(r.spread, processes=3, ci_history_runs=0),
    )


def two(run: str, eps: float, day: int = 2, workers: int = 2) -> CellRow:
    """A one-node row of ``workers`` local workers."""
    return row(replace(MWMS, workers=workers), run, eps, nodes=1, day=day)


def predicted(rows: list[CellRow], counts: tuple[int, ...] = (2,)) -> scaling.Predictions:
    return scaling.predictions(rows, scaling.Query(replace(ONE), counts, "ring"), collectives())


def log_half(line: scaling.Line) -> float:
    return math.log(line.prediction.high / line.prediction.examples_per_sec)


def test_an_exact_fit_carries_the_baseline_ci_alone() -> None:
    found = predicted([base()], (1, 2))
    one, at2 = found.lines
    p = at2.prediction
    assert p.low < p.examples_per_sec < p.high
    c = (1 - p.allreduce_share) ** 2  # the step's compute share, squared
    sd1 = 0.05 / t_quantile(2)
    assert log_half(at2) == pytest.approx(t_quantile(2) * math.sqrt(c) * sd1)  # no fit part, no model part
    assert log_half(one) == pytest.approx(0.05)  # one device: its own CI
    assert at2.model is None and "relative RMS 0%, 2 df" in found.method
    assert "the model's own error is not calibrated: no measured point on several devices" in found.method
    assert "CI of run local (sd = log half-width / t at 2 df)" in found.method


def test_a_wider_baseline_ci_widens_every_interval() -> None:
    narrow, wide = predicted([base(0.03)], (2, 8)), predicted([base(0.12)], (2, 8))
    for a, b in zip(narrow.lines, wide.lines, strict=True):
        assert b.prediction.low < a.prediction.low and b.prediction.high > a.prediction.high


def table(noise: float) -> pd.DataFrame:
    """Ring all-reduce times at 2 to 4 workers and 5 sizes (15 rows, 13 df), each off the planted
    cost by exp(``noise`` x the same seeded normal draw)."""
    rows = [
        r | {"devices": n, "bytes": m}
        for r in collectives().to_dict("records")[:1]
        for n in (2, 3, 4)
        for m in (4096, 65536, 2**18, 2**20, 2**22)
    ]
    frame = pd.DataFrame(rows)
    planted = (
        2 * (frame["devices"] - 1) * 50e-6
        + 2 * (frame["devices"] - 1) / frame["devices"] * frame["bytes"] * 1e-9
    )
    return frame.assign(time_s=planted * np.exp(noise * np.random.default_rng(11).normal(size=len(frame))))


def test_a_worse_fit_widens_the_interval() -> None:
    fits = [
        scaling.predictions([base()], scaling.Query(ONE, (2, 8), "ring"), table(x)) for x in (0.1, 0.3, 0.6)
    ]
    assert [f.cost.df for f in fits] == [13, 13, 13]
    for lines in zip(*(f.lines for f in fits), strict=True):
        halves = [log_half(line) for line in lines]
        assert halves == sorted(halves) and halves[0] < halves[-1]
        assert all(
            line.prediction.low < line.prediction.examples_per_sec < line.prediction.high for line in lines
        )
    assert "relative RMS" in fits[0].method and "13 df" in fits[0].method


def test_the_model_error_comes_from_the_other_points_never_the_predicted_ones_own() -> None:
    # one node, its 8 cores shared: 3 workers measured twice, 2 workers once; predicted at 2 and 4
    threes = [two("s1", 6000.0, 2, workers=3), two("s2", 6300.0, 3, workers=3)]
    own = two("f1", 6200.0, 4)
    found = predicted([base(), *threes, own], (2, 4))
    at2, at4 = found.lines
    assert at2.measured is not None and at2.measured.value == 6200.0
    assert at2.model is not None and at2.model.df == 2  # the 3-worker rows only
    assert at4.model is not None and at4.model.df == 3  # nothing measured at 4: every point
    # the own row's figure moves neither its interval nor the prediction: no circularity
    moved = predicted([base(), *threes, replace(own, examples_per_sec=Estimate(3000.0))], (2,))
    assert (moved.lines[0].prediction.low, moved.lines[0].prediction.high) == pytest.approx(
        (at2.prediction.low, at2.prediction.high)
    )
    assert moved.lines[0].inside is False and at2.inside is True
    assert "model error: RMS" in found.method and "3 measured point(s)" in found.method


def test_a_larger_model_error_widens_the_interval() -> None:
    near = predicted([base(), two("s1", 6200.0), two("s2", 6300.0, 3)], (2, 4))
    far = predicted([base(), two("s1", 3000.0), two("s2", 3100.0, 3)], (2, 4))
    alone = log_half(predicted([base()], (4,)).lines[0])
    assert log_half(far.lines[1]) > log_half(near.lines[1]) >= alone - 1e-12


def test_the_fit_is_checked_on_one_node_rows_at_other_counts() -> None:
    three = replace(MWMS, workers=3)
    rows = [base(), two("a", 6000.0), row(three, "b", 8000.0, nodes=1, day=3)]
    found = scaling.predictions(rows, scaling.Query(ONE, (2, 3, 4), "ring"), collectives())
    at2, at3, at4 = found.lines
    assert at2.model is not None and at2.model.df == 1  # n = 3's point only
    assert at3.model is not None and at3.model.df == 1  # n = 2's point only
    assert at4.model is not None and at4.model.df == 2
