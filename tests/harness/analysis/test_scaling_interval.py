"""predict's 95% interval (harness.analysis.scaling.predictions): what widens it, the parts a
described link and the fit carry, and the leave-one-out rule of the model's own error. Rows built
like a run's (tests/harness/analysis/test_links.py). No TensorFlow."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from harness.analysis import links, links_text, scaling
from harness.contract.columns import Estimate
from harness.contract.records import CellRow
from harness.formulas.stats import t_quantile
from tests.harness.analysis.test_links import MWMS, ONE, cluster_rows, collectives, row

LINK = scaling.link_alpha_beta(10, 50)


def base(ci: float = 0.05, eps: float = 6400.0) -> CellRow:
    """The one-node 1-worker row: ``eps`` examples/s, CI exp(+-ci) over 3 processes (2 df)."""
    r = row(ONE, "local", eps, nodes=1, day=1)
    return replace(
        r,
        examples_per_sec=Estimate(eps, eps * math.exp(-ci), eps * math.exp(ci)),
        spread=replace(r.spread, processes=3, ci_history_runs=0),
    )


def two(run: str, eps: float, link: float, day: int = 2, nodes: int = 2) -> CellRow:
    return row(MWMS, run, eps, nodes=nodes, link=link, day=day)


def predicted(
    rows: list[CellRow], counts: tuple[int, ...] = (2,), link: scaling.AlphaBeta | None = LINK
) -> scaling.Predicted:
    return scaling.predictions(rows, scaling.Query(replace(ONE), counts, "ring", link), collectives())


def log_half(line: scaling.Line) -> float:
    return math.log(line.prediction.high / line.prediction.examples_per_sec)


def test_a_described_link_carries_the_baseline_ci_alone() -> None:
    found = predicted([base()], (1, 2, 4))
    one, at2, at4 = found.lines
    p = at2.prediction
    assert p.low < p.examples_per_sec < p.high
    c = (found.lines[0].prediction.step_s / p.step_s) ** 2  # the step's compute share, squared
    sd1 = 0.05 / t_quantile(2)
    assert log_half(at2) == pytest.approx(t_quantile(2) * math.sqrt(c) * sd1)  # no fit part, no model part
    assert log_half(one) == pytest.approx(0.05)  # one device: its own CI
    assert log_half(at4) < log_half(at2)  # the all-reduce, exact, takes more of the step
    assert at2.model is None and "given, exact" in found.method
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
    # 2 workers measured at about 1 and about 10 Gbit/s; predicted at 10 Gbit/s
    slow = [two("s1", 9000.0, 0.95, 2), two("s2", 9300.0, 0.96, 3)]  # predicted 9,462
    own = two("f1", 12000.0, 9.4, 4)  # predicted 12,277
    found = predicted([base(), *slow, own], (2, 4))
    at2, at4 = found.lines
    assert at2.measured is not None and at2.measured.value == 12000.0  # the point at its own link
    assert at2.model is not None and at2.model.df == 2  # the 1 Gbit/s rows only
    assert at4.model is not None and at4.model.df == 3  # nothing measured at 4: every point
    # the own row's figure moves neither its interval nor the prediction: no circularity
    moved = predicted([base(), *slow, replace(own, examples_per_sec=Estimate(3000.0))], (2,))
    assert (moved.lines[0].prediction.low, moved.lines[0].prediction.high) == pytest.approx(
        (at2.prediction.low, at2.prediction.high)
    )
    assert moved.lines[0].inside is False and at2.inside is True
    assert "model error: RMS" in found.method and "3 measured point(s)" in found.method


def test_a_larger_model_error_widens_the_interval() -> None:
    near = predicted([base(), two("s1", 9300.0, 0.95), two("s2", 9400.0, 0.96, 3)], (2, 4))
    far = predicted([base(), two("s1", 6000.0, 0.95), two("s2", 6200.0, 0.96, 3)], (2, 4))
    assert log_half(far.lines[1]) > log_half(near.lines[1]) > log_half(predicted([base()], (4,)).lines[0])


def test_the_fit_is_checked_on_one_node_rows_at_other_counts() -> None:
    three = replace(MWMS, workers=3)
    rows = [base(), two("a", 6000.0, 0.0, nodes=1), row(three, "b", 8000.0, nodes=1, day=3)]
    found = scaling.predictions(rows, scaling.Query(ONE, (2, 3, 4), "ring"), collectives())
    at2, at3, at4 = found.lines
    assert at2.model is not None and at2.model.df == 1  # n = 3's point only
    assert at3.model is not None and at3.model.df == 1  # n = 2's point only
    assert at4.model is not None and at4.model.df == 2


def test_compare_links_gives_each_point_an_interval_and_whether_it_holds_the_measurement() -> None:
    result = links.compare([base(), *cluster_rows()[1:]], collectives())
    conf = next(c for c in result.configurations if c.strategy == "multi_worker_mirrored")
    for p in conf.points:
        low, high = p.interval
        assert p.predicted is not None and low < p.predicted < high
        assert p.inside == (low <= p.side.value <= high)
    row_text = links_text.table_rows(result)[0][6]
    assert "[" in row_text and ("inside" in row_text or "outside" in row_text)
    point = links_text.to_json(result)["configurations"][0]["points"][0]
    assert {"predicted_low", "predicted_high", "inside"} <= set(point)
