"""compare-links' analysis on rows built like a run's (harness.results.measurement.cell_row): a
two-node cluster whose link was shaped to about 1 and about 10 Gbit/s, dense under
multi_worker_mirrored (2 workers) and parameter_server (1 worker + 1 ps + chief), and the one-node
1-worker baseline the model scales. The rows' costs across the link and their figures follow a
planted model (harness.analysis.scale.scale_out). No TensorFlow."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.analysis.comparisons import across
from harness.analysis.scale import links, links_text, scale_out, scaling_figure
from harness.contract.columns import Estimate
from harness.contract.outputs import dumps
from harness.contract.records import CellRow, Machine, RunInfo, Status
from harness.errors import HarnessError
from harness.formulas import across_runs
from harness.formulas.verdicts import EQUIVALENT, HIGHER, UNDECIDED
from harness.results.measurement import cell_row
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol

XEON = Machine(device_kind="CPU", device_name="Xeon", host_cores=8)
MWMS = Cell(model="dense", strategy="multi_worker_mirrored", communication="ring", workers=2)
PS = Cell(model="dense", strategy="parameter_server", workers=1, ps=1)
ONE = Cell(model="dense", strategy="multi_worker_mirrored", workers=1)
DENSE_BYTES = 407_080
"""dense's gradients, float32 (harness.spec.collectives)."""
STEP1_S = 0.010
"""The one-node baseline's step: 64 examples at 6,400 examples/s."""
ALPHA_S, KAPPA, GAMMA, REST_S = 300e-6, 1.2, 2.0, 0.5e-3
"""The planted all-reduce: 300 us per ring step, 1.2x the link's wire time, 2 ns per byte handled,
0.5 ms of rest."""
TRIPS_S, PS_KAPPA, PS_REST_S = 2e-3, 1.0, 1e-3
"""The planted parameter server: 2 ms of round trips per update, the link's wire time, 1 ms of rest."""


def allreduce_s(nbytes: float, gbps: float) -> float:
    return 2 * ALPHA_S + nbytes * (KAPPA * 8e-9 / gbps + GAMMA * 1e-9)


def served_s(gbps: float) -> float:
    return TRIPS_S + PS_KAPPA * 2 * DENSE_BYTES * 8e-9 / gbps


def mwms_eps(gbps: float) -> float:
    """The planted model's dense at 2 workers: 128 / (10 ms + T(gradients) + 0.1 T(4 B) + rest)."""
    return 128 / (STEP1_S + allreduce_s(DENSE_BYTES, gbps) + 0.1 * allreduce_s(4, gbps) + REST_S)


def ps_eps(gbps: float) -> float:
    return 64 / (STEP1_S + served_s(gbps) + PS_REST_S)


def row(
    cell: Cell,
    run: str,
    eps: float,
    *,
    nodes: int | None = 2,
    link: float | None = None,
    processes: tuple[float, ...] = (),
    day: int = 1,
) -> CellRow:
    """An ok row of ``cell`` in run ``run`` at ``eps`` examples/s on ``nodes`` nodes whose chief
    measured ``link`` Gbit/s, its costs across the link timed apart as the planted model says."""
    r = cell_row(cell, Protocol())
    b = r.breakdown
    if link and cell.strategy == "multi_worker_mirrored" and cell.workers > 1:
        b = replace(b, allreduce_s=allreduce_s(DENSE_BYTES, link), reduce_s=allreduce_s(4, link))
    elif link and cell.strategy == "parameter_server":
        b = replace(b, ps_read_s=served_s(link) / 2, ps_update_s=served_s(link) / 2)
    return replace(
        r,
        run=RunInfo(run_id=run, timestamp=f"2026-12-{day:02d}T00:00:00+00:00"),
        status=Status.OK,
        examples_per_sec=Estimate(eps),
        spread=replace(r.spread, process_examples_per_sec=list(processes or (eps * 0.98, eps, eps * 1.02))),
        ran=replace(r.ran, nodes=nodes, link_gbps=link),
        updates=replace(r.updates, allreduces_per_update=1.1 if cell.workers > 1 else None),
        breakdown=replace(b, step_s=cell.effective_batch / eps),
        machine=XEON,
    )


RUNS = {
    "slow-a": (2, 0.94),
    "slow-b": (3, 0.96),
    "slow-c": (4, 0.95),
    "fast-a": (5, 9.3),
    "fast-b": (6, 9.5),
    "fast-c": (7, 9.1),
}
"""Run id -> (day, measured link Gbit/s)."""


MID = {"mid-a": (8, 3.0), "mid-b": (9, 3.1), "mid-c": (10, 2.9)}
"""A third setting, for the checks that need two settings besides the one left out."""


def cluster_rows(off: float = 1.0, mid: bool = False) -> list[CellRow]:
    """Every run's rows as the planted model says (the slow runs' figures x ``off``; with ``mid``,
    a third setting at about 3 Gbit/s), and the one-node baseline: dense, 1 worker, 6,400
    examples/s (10 ms a step)."""
    out = [row(ONE, "local", 6400.0, nodes=1, day=1)]
    for run, (day, link) in {**RUNS, **(MID if mid else {})}.items():
        k = off if run.startswith("slow") else 1.0
        out.append(row(MWMS, run, mwms_eps(link) * k, link=link, day=day))
        out.append(row(PS, run, ps_eps(link) * k, link=link, day=day))
    return out


@pytest.fixture(scope="module")
def result() -> links.LinkComparison:
    return links.compare(cluster_rows())


def by_strategy(c: links.LinkComparison, strategy: str) -> links.Configuration:
    (conf,) = [x for x in c.configurations if x.strategy == strategy]
    return conf


def geomean(*xs: float) -> float:
    out = 1.0
    for x in xs:
        out *= x
    return out ** (1 / len(xs))


def fast_over_slow() -> float:
    """The planted model's dense under MultiWorkerMirrored: the fast runs over the slow (geomean)."""
    return geomean(*(mwms_eps(g) for g in (9.3, 9.5, 9.1))) / geomean(
        *(mwms_eps(g) for g in (0.94, 0.96, 0.95))
    )


def test_the_faster_link_is_decided_faster_with_the_cross_run_ci(result: links.LinkComparison) -> None:
    assert [s.label for s in result.settings] == ["0.95 Gbit/s", "9.3 Gbit/s"]
    conf = by_strategy(result, "multi_worker_mirrored")
    slow, fast = conf.points
    assert slow.versus is None and fast.versus is not None
    # the engine compare-hardware uses: sides over runs under the calibration pooled with these runs
    assert result.spread.pairs == across_runs.CALIBRATION.pairs + 6
    slow_eps = [mwms_eps(g) for g in (0.94, 0.96, 0.95)]
    fast_eps = [mwms_eps(g) for g in (9.3, 9.5, 9.1)]

    def runs(eps: list[float]) -> list[across_runs.RunFigure]:
        return [across_runs.RunFigure(x, (x * 0.98, x, x * 1.02)) for x in eps]

    expected = across_runs.ratio(
        across_runs.side(runs(fast_eps), result.spread, across.SEVERAL),
        across_runs.side(runs(slow_eps), result.spread, across.SEVERAL),
    )
    assert (fast.versus.ratio.value, fast.versus.ratio.low) == pytest.approx((expected.value, expected.low))
    assert fast.versus.ratio.value == pytest.approx(geomean(*fast_eps) / geomean(*slow_eps))
    assert fast.versus.verdict == HIGHER and fast.side.runs == 3
    assert fast.crossing_s == pytest.approx(allreduce_s(DENSE_BYTES, 9.3) + 0.1 * allreduce_s(4, 9.3))
    assert fast.step_s == pytest.approx(128 / mwms_eps(9.3))


@pytest.mark.parametrize("strategy, eps", [("multi_worker_mirrored", mwms_eps), ("parameter_server", ps_eps)])
def test_each_setting_is_predicted_from_a_fit_that_leaves_it_out(
    result: links.LinkComparison, strategy: str, eps: object
) -> None:
    conf = by_strategy(result, strategy)
    assert conf.modelled.modelled and "from " + ONE.id + " on one node (1 runs)" in conf.modelled.note
    for p, gbps in zip(conf.points, (0.95, 9.3), strict=True):
        assert p.predicted == pytest.approx(eps(gbps), rel=0.01)  # type: ignore[operator]
        assert p.error is not None and abs(p.error) < 0.01 and p.inside
    # the planted coefficients, recovered from the costs timed apart
    rows = [r for r in cluster_rows() if (r.ran.nodes or 1) > 1]
    fitted = across.spread([rows], across_runs.CALIBRATION)
    configs = {c.cell_id: links._config(r, cluster_rows(), fitted) for r in rows if (c := r.cell)}
    link = scale_out.fit(rows, {k: v for k, v in configs.items() if v}, strategy)
    assert link is not None
    if strategy == "multi_worker_mirrored":
        assert (*link.coef, link.rest_s) == pytest.approx((ALPHA_S, KAPPA, GAMMA, REST_S), rel=0.01)
    else:  # one model's bytes: its round trips and its CPU per byte are one constant, fitted as a sum
        assert link.time_s(scale_out.served(DENSE_BYTES, 2.0)) == pytest.approx(served_s(2.0), rel=0.01)
        assert (link.coef[1], link.rest_s) == pytest.approx((PS_KAPPA, PS_REST_S), rel=0.01)


def test_a_settings_own_figures_never_reach_its_prediction() -> None:
    """Not circular: the slow runs' figures moved leave the slow setting's prediction as it was (its
    rest comes from the other settings' runs; the costs timed apart are measured apart from the
    figures); the fast setting's, whose rest comes from them, moves."""
    before, after = (
        by_strategy(links.compare(x), "multi_worker_mirrored")
        for x in (cluster_rows(), cluster_rows(off=1.3))
    )
    assert after.points[0].predicted == pytest.approx(before.points[0].predicted)
    assert after.points[1].predicted != pytest.approx(before.points[1].predicted)
    assert after.points[0].error == pytest.approx(1 / 1.3 - 1, rel=0.02)  # the slow runs 30% faster


def test_the_interval_carries_the_model_error_of_the_other_settings() -> None:
    clean, off = (
        by_strategy(links.compare(cluster_rows(off=k, mid=True)), "multi_worker_mirrored").points
        for k in (1.0, 1.2)
    )

    def width(p: links.AtLink) -> float:
        return p.interval[1] / p.interval[0]

    assert all(p.inside and width(p) < 1.25 for p in clean)  # the model erred nowhere: the baseline CI alone
    assert all(width(b) > 1.5 * width(a) for a, b in zip(clean, off, strict=True))  # the slow miss


def test_no_one_node_baseline_says_what_to_run() -> None:
    rows = [r for r in cluster_rows() if r.run.run_id != "local"]
    rows.append(row(ONE, "elsewhere", 6400.0, nodes=2, link=0.95))  # on two nodes: no baseline
    (conf,) = [c for c in links.compare(rows).configurations if c.cell_id == MWMS.id]
    assert conf.points[0].predicted is None and conf.modelled.short == "no baseline"
    assert (
        "`python -m harness run --model dense --strategy multi_worker_mirrored --workers 1`"
        in conf.modelled.note
    )


def test_rows_without_their_costs_timed_apart_are_not_modelled() -> None:
    rows = [
        replace(r, breakdown=replace(r.breakdown, ps_read_s=None, ps_update_s=None)) for r in cluster_rows()
    ]
    conf = by_strategy(links.compare(rows), "parameter_server")
    assert conf.modelled.short == "no parts" and "ps_read_s and ps_update_s" in conf.modelled.note
    assert all(p.predicted is None for p in conf.points) and not conf.answers


def test_the_answer_comes_first_in_words(result: links.LinkComparison) -> None:
    text = links_text.text(result)
    first = text.splitlines()[2]
    assert first.startswith("dense, MultiWorkerMirroredStrategy on 2 workers")
    ratio = fast_over_slow()
    assert f"on 2 nodes: 9.3 Gbit/s trains {ratio:.2f}x faster than 0.95 Gbit/s [" in first
    assert f"higher; the model said {ratio:.2f}x" in first


def test_where_the_model_is_right_and_where_it_is_not() -> None:
    conf = by_strategy(links.compare(cluster_rows(off=1.2, mid=True)), "multi_worker_mirrored")
    sentence = links_text.right(conf, 0.15)
    assert "the model is right within ±15% at 3 Gbit/s, 9.3 Gbit/s and off by more at 0.95 Gbit/s" in sentence
    assert "-17% at 0.95 Gbit/s" in sentence and "predicts slower than measured" in sentence
    # where: the costs across the link as modelled (the planted ones), the rest of the step not
    assert (
        "At 0.95 Gbit/s the costs across the link took" in sentence and "from the other settings)" in sentence
    )


def test_the_table_has_a_row_per_configuration_and_setting(result: links.LinkComparison) -> None:
    rows = links_text.table_rows(result)
    assert len(rows) == 4 and all(len(r) == len(links_text.HEADER) for r in rows)
    mwms = [r for r in rows if "MultiWorker" in r[0]]
    assert mwms[0][1] == "0.95 Gbit/s" and mwms[0][4] == "(the slowest)" and mwms[1][4].endswith("higher")
    assert mwms[0][6].startswith(f"{mwms_eps(0.95):,.0f}"[:3]) and mwms[0][6].endswith("inside")
    ps = [r for r in rows if "ParameterServer" in r[0]]
    assert ps[0][6].endswith("inside") and ps[0][7] in ("+0%", "-0%")


def test_the_answer_for_n_nodes() -> None:
    result = links.compare(cluster_rows(), links=(1.0, 10.0), counts=(2, 4, 64))
    conf = by_strategy(result, "multi_worker_mirrored")
    at1, _ = conf.answers
    assert [a.gbps for a in conf.answers] == [1.0, 10.0] and [x.nodes for x in at1.lines] == [2, 4, 64]
    two, four, _ = at1.lines
    assert two.measured and not four.measured  # 2 nodes measured near 1 Gbit/s; 4 extrapolated
    sent4 = 1.5 * (DENSE_BYTES + 0.1 * 4)  # 2(N - 1)/N of the bytes, 4 nodes
    step4 = STEP1_S + 1.1 * 6 * ALPHA_S + sent4 * (KAPPA * 8e-9 / 1.0 + GAMMA * 1e-9) + REST_S
    assert four.predicted.value == pytest.approx(4 * 64 / step4, rel=1e-6)
    assert four.efficiency[0] == pytest.approx(STEP1_S / step4, rel=1e-6)
    assert four.predicted.low < four.predicted.value < four.predicted.high
    assert at1.link_bound_from is None or at1.link_bound_from >= 4
    # 2 nodes beat one node's best (6,400 examples/s) once 128 / step(2) > 6,400: step(2) < 20 ms
    assert at1.best_examples_per_sec == 6400.0 and at1.paying_gbps is not None
    sent2 = DENSE_BYTES + 0.4
    step2 = STEP1_S + 1.1 * 2 * ALPHA_S + sent2 * (KAPPA * 8e-9 / at1.paying_gbps + GAMMA * 1e-9) + REST_S
    assert step2 == pytest.approx(0.020, rel=1e-2)
    ps = by_strategy(result, "parameter_server").answers[0]
    assert ps.lines[0].measured and ps.lines[-1].predicted.value == pytest.approx(
        64 * 1.0e9 / (8 * PS_KAPPA * DENSE_BYTES), rel=1e-6
    )  # 63 workers: the server's link bounds them
    assert ps.lines[0].predicted.value == pytest.approx(ps_eps(1.0), rel=0.01)  # 2 nodes: 1 worker
    assert ps.paying_gbps is None  # 1 worker and a server never beat one node's best
    # the server's link bounds the workers from the first count whose pace exceeds it
    assert ps.link_bound_from == 64 and ps.fewest == 4  # 3 workers beat one node's 6,400 examples/s
    assert at1.fewest == 2
    text = links_text.nodes_text(result)
    assert "The answer for N nodes at 1 Gbit/s" in text and "validated on 2 nodes only" in text
    assert "measured at this link: 2 nodes." in text


def test_the_json_holds_the_same_answer(result: links.LinkComparison) -> None:
    obj = json.loads(dumps(links_text.to_json(result, [Path("f.png")])))
    assert [s["label"] for s in obj["settings"]] == ["0.95 Gbit/s", "9.3 Gbit/s"]
    assert obj["settings"][1]["runs"] == ["fast-c", "fast-a", "fast-b"]
    mwms = next(c for c in obj["configurations"] if c["strategy"] == "multi_worker_mirrored")
    assert mwms["answer"] == links_text.answer(by_strategy(result, "multi_worker_mirrored"), 0.05)
    assert ONE.id in mwms["prediction"]["note"]
    slow, fast = mwms["points"]
    assert slow["against_slowest"] is None and fast["against_slowest"]["verdict"] == HIGHER
    assert {"predicted_low", "predicted_high", "inside"} <= set(fast)
    assert [x["nodes"] for x in mwms["nodes_answer"][0]["lines"]] == list(scale_out.NODE_COUNTS)
    assert obj["figures"] == ["f.png"]


def test_an_undecided_ratio_says_how_many_runs_would_decide_it() -> None:
    spread = (10000 * 0.9, 10000.0, 10000 * 1.1)  # processes 10% apart: one run a side is too few
    rows = [
        row(MWMS, "s", 10000.0, link=1.0, day=2, processes=spread),
        row(MWMS, "f", 10800.0, link=10.0, day=3, processes=tuple(x * 1.08 for x in spread)),
    ]
    conf = links.compare(rows).configurations[0]
    v = conf.points[1].versus
    assert v is not None and v.verdict == UNDECIDED and v.runs_to_decide is not None
    s, f = (p.side for p in conf.points)
    k = v.runs_to_decide
    # k runs a side decide it, k - 1 do not (the model's CI at the same spread)
    assert across_runs.ratio(across_runs.like_k(f, k), across_runs.like_k(s, k)).low > 1
    assert across_runs.ratio(across_runs.like_k(f, k - 1), across_runs.like_k(s, k - 1)).low <= 1
    assert f"about {k} runs on each setting would likely decide it" in links_text.answer(conf, 0.05)


@pytest.mark.parametrize(
    "rows, model, message",
    [
        ([row(ONE, "local", 6400.0, nodes=1)], None, "no multi-node rows (status ok, nodes >= 2)"),
        ([row(MWMS, "a", 9000.0, link=None)], None, "hold no measured link"),
        (cluster_rows(), "cnn", "Received --model 'cnn'; expected one the multi-node rows hold (dense)"),
        (
            [row(MWMS, "a", 9000.0, link=1.0), row(MWMS, "b", 9100.0, link=1.1)],
            None,
            "hold one link setting (1.05 Gbit/s: runs a, b); compare-links needs two or more",
        ),
    ],
)
def test_bad_input_names_what_is_missing_and_how_to_measure_it(
    rows: list[CellRow], model: str | None, message: str
) -> None:
    with pytest.raises(HarnessError) as e:
        links.compare(rows, model, where="results")
    assert message in str(e.value) and e.value.exit_code == 2
    assert "python -m harness run" in str(e.value) or "slurm-nodes.sh" in str(e.value)


def test_the_figure_is_written(result: links.LinkComparison, tmp_path: Path) -> None:
    paths = scaling_figure.draw(result, tmp_path)
    assert [p.name for p in paths] == ["compare_links.png", "compare_links.svg"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_a_failed_multi_node_row_is_not_read() -> None:
    rows = [*cluster_rows(), replace(row(MWMS, "slow-d", 1.0, link=0.95, day=8), status=Status.FAILED)]
    conf = by_strategy(links.compare(rows), "multi_worker_mirrored")
    assert conf.points[0].side.runs == 3


def test_the_curve_is_the_models_own_over_every_setting(result: links.LinkComparison) -> None:
    conf = by_strategy(result, "multi_worker_mirrored")
    for gbps, eps in conf.modelled.curve[::10]:
        assert eps == pytest.approx(mwms_eps(gbps), rel=0.01)
    gbps = [g for g, _ in conf.modelled.curve]
    assert gbps[0] == pytest.approx(0.95 / 2) and gbps[-1] == pytest.approx(9.3 * 2)


def test_parameter_server_runs_equivalent_across_links_stay_so() -> None:
    rows = [
        replace(r, examples_per_sec=Estimate(5000.0)) if r.cell.strategy == "parameter_server" else r
        for r in cluster_rows()
    ]
    conf = by_strategy(links.compare(rows), "parameter_server")
    assert conf.points[1].versus is not None and conf.points[1].versus.verdict in (EQUIVALENT, UNDECIDED)
