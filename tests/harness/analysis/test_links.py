"""compare-links' analysis on rows built like a run's (harness.results.measurement.cell_row): a
two-node cluster whose link was shaped to about 1 and about 10 Gbit/s, dense under
multi_worker_mirrored (2 workers) and parameter_server (1 worker + 1 ps + chief), and the one-node
1-worker baseline predict scales. No TensorFlow."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from harness.analysis import across, links, links_figure, links_text, scaling
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
ALPHA_S = 50e-6
"""The planted alpha of the collectives rows: 50 us per ring step."""


def row(
    cell: Cell,
    run: str,
    eps: float,
    *,
    nodes: int | None = 2,
    link: float | None = None,
    processes: tuple[float, ...] = (),
    allreduce_s: float | None = None,
    day: int = 1,
) -> CellRow:
    """An ok row of ``cell`` in run ``run`` at ``eps`` examples/s on ``nodes`` nodes whose chief
    measured ``link`` Gbit/s."""
    r = cell_row(cell, Protocol())
    return replace(
        r,
        run=RunInfo(run_id=run, timestamp=f"2026-12-{day:02d}T00:00:00+00:00"),
        status=Status.OK,
        examples_per_sec=Estimate(eps),
        spread=replace(r.spread, process_examples_per_sec=list(processes or (eps * 0.98, eps, eps * 1.02))),
        ran=replace(r.ran, nodes=nodes, link_gbps=link),
        breakdown=replace(
            r.breakdown,
            allreduce_s=allreduce_s,
            step_s=None if allreduce_s is None else cell.effective_batch / eps,
        ),
        machine=XEON,
    )


RUNS = {  # run id -> (day, measured link Gbit/s, MWMS examples/s, PS examples/s)
    "slow-a": (2, 0.94, 8000.0, 5000.0),
    "slow-b": (3, 0.96, 8100.0, 5050.0),
    "fast-a": (4, 9.3, 11700.0, 5020.0),
    "fast-b": (5, 9.5, 11900.0, 5010.0),
    "fast-c": (6, 9.1, 11800.0, 4990.0),
}


def cluster_rows() -> list[CellRow]:
    """Every run's rows, and the one-node baseline: dense, 1 worker, 6,400 examples/s (10 ms a step)."""
    out = [row(ONE, "local", 6400.0, nodes=1, day=1)]
    for run, (day, link, mwms, ps) in RUNS.items():
        out.append(row(MWMS, run, mwms, link=link, allreduce_s=4e-3 if link < 1 else 0.6e-3, day=day))
        out.append(row(PS, run, ps, link=link, day=day))
    return out


def collectives() -> pd.DataFrame:
    """Ring all-reduce times on the baseline's machine at 2 and 3 workers: alpha 50 us, 1 ns/B."""
    return pd.DataFrame(
        [
            {
                "status": "ok",
                "strategy": "multi_worker_mirrored",
                "op": "ring",
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


def predicted(gbps: float, latency_s: float = ALPHA_S) -> float:
    """predict's dense at 2 workers over a link of ``gbps``: 10 ms + T(2, gradients)."""
    step = 0.010 + 2 * latency_s + DENSE_BYTES * 8 / (gbps * 1e9)
    return 128 / step


@pytest.fixture(scope="module")
def result() -> links.LinkComparison:
    return links.compare(cluster_rows(), collectives())


def by_strategy(c: links.LinkComparison, strategy: str) -> links.Configuration:
    (conf,) = [x for x in c.configurations if x.strategy == strategy]
    return conf


def test_runs_within_25_percent_of_their_median_are_one_setting() -> None:
    settings = links.group_links({"a": 0.94, "b": 1.1, "c": 9.3, "d": 9.1, "e": 25.0, "f": 11.0})
    assert [s.run_ids for s in settings] == [("a", "b"), ("d", "c", "f"), ("e",)]
    assert [s.label for s in settings] == ["1.02 Gbit/s", "9.3 Gbit/s", "25 Gbit/s"]
    # 11 is within 25% of the median of 9.1, 9.3, 11 (9.3); 25 is not of 9.1, 9.3, 11, 25 (10.15)
    assert links.group_links({"a": 1.0, "b": 1.6})[0].run_ids == ("a", "b")  # 1.3 +- 23%
    assert links.group_links({"a": 1.0, "b": 1.8})[0].run_ids == ("a",)  # 1.4 - 29%


def test_the_faster_link_is_decided_faster_with_the_cross_run_ci(result: links.LinkComparison) -> None:
    assert [s.label for s in result.settings] == ["0.95 Gbit/s", "9.3 Gbit/s"]
    conf = by_strategy(result, "multi_worker_mirrored")
    slow, fast = conf.points
    assert slow.versus is None and fast.versus is not None
    # the engine compare-hardware uses: sides over runs under the calibration pooled with these runs
    assert result.spread.pairs == across_runs.CALIBRATION.pairs + 1 + 3

    def runs(*eps: float) -> list[across_runs.RunFigure]:
        return [across_runs.RunFigure(x, (x * 0.98, x, x * 1.02)) for x in eps]

    slow_side = across_runs.side(runs(8000.0, 8100.0), result.spread, across.SEVERAL)
    fast_side = across_runs.side(runs(11700.0, 11900.0, 11800.0), result.spread, across.SEVERAL)
    expected = across_runs.ratio(fast_side, slow_side)
    assert (fast.versus.ratio.value, fast.versus.ratio.low) == pytest.approx((expected.value, expected.low))
    # a setting's figure: the geometric mean of its runs'
    assert fast.versus.ratio.value == pytest.approx((11700 * 11900 * 11800) ** (1 / 3) / (8000 * 8100) ** 0.5)
    assert fast.versus.verdict == HIGHER and fast.versus.runs_to_decide == 0
    assert fast.side.runs == 3
    assert (slow.allreduce_s, fast.allreduce_s) == (4e-3, 0.6e-3)
    assert fast.step_s == pytest.approx(128 / 11800)


def test_predict_figure_from_the_one_node_baseline_with_the_fitted_alpha(
    result: links.LinkComparison,
) -> None:
    conf = by_strategy(result, "multi_worker_mirrored")
    assert conf.modelled.baseline_cell_id == ONE.id and conf.workers == 2
    assert conf.modelled.latency_us == pytest.approx(50.0, rel=1e-6)
    assert "alpha of the alpha-beta fit of multi_worker_mirrored[ring]" in conf.modelled.note
    slow, fast = conf.points
    assert slow.predicted == pytest.approx(predicted(0.95))
    assert fast.predicted == pytest.approx(predicted(9.3))
    slow_eps = (8000 * 8100) ** 0.5
    assert slow.error == pytest.approx((predicted(0.95) - slow_eps) / slow_eps)
    assert fast.versus is not None
    assert fast.predicted_ratio == pytest.approx(predicted(9.3) / predicted(0.95))
    gbps = [g for g, _ in conf.modelled.curve]
    assert gbps[0] == pytest.approx(0.95 / 2) and gbps[-1] == pytest.approx(9.3 * 2)


def test_without_collectives_the_latency_is_zero_and_said() -> None:
    conf = by_strategy(links.compare(cluster_rows(), None), "multi_worker_mirrored")
    assert conf.modelled.latency_us == 0.0 and "latency 0 us" in conf.modelled.note
    assert conf.points[0].predicted == pytest.approx(predicted(0.95, latency_s=0.0))


def test_parameter_server_is_not_modelled_and_equivalent_across_links(result: links.LinkComparison) -> None:
    conf = by_strategy(result, "parameter_server")
    assert conf.modelled.note == "not modelled (predict models all-reduce only)"
    assert all(p.predicted is None and p.error is None for p in conf.points)
    assert conf.points[1].versus is not None and conf.points[1].versus.verdict in (EQUIVALENT, UNDECIDED)
    assert "not modelled (predict models all-reduce only)" in links_text.right(conf, 0.15)
    assert [r[6] for r in links_text.table_rows(result) if r[0] == conf.title] == ["not modelled"] * 2


def test_no_one_node_baseline_says_what_to_run() -> None:
    rows = [r for r in cluster_rows() if r.run.run_id != "local"]
    rows.append(row(ONE, "elsewhere", 6400.0, nodes=2, link=0.95))  # on two nodes: no baseline
    (conf,) = [c for c in links.compare(rows, collectives()).configurations if c.cell_id == MWMS.id]
    assert conf.points[0].predicted is None and conf.modelled.short == "no baseline"
    assert (
        "`python -m harness run --model dense --strategy multi_worker_mirrored --workers 1`"
        in conf.modelled.note
    )


def test_the_answer_comes_first_in_words(result: links.LinkComparison) -> None:
    text = links_text.text(result)
    first = text.splitlines()[2]
    assert first.startswith("dense, MultiWorkerMirroredStrategy on 2 workers")
    assert "on 2 nodes: 9.3 Gbit/s trains 1.47x faster than 0.95 Gbit/s [" in first
    assert f"higher; predict said {predicted(9.3) / predicted(0.95):.2f}x" in first
    assert "; predict: not modelled (predict models all-reduce only)." in text


def test_where_the_model_is_right_and_where_it_is_not(result: links.LinkComparison) -> None:
    conf = by_strategy(result, "multi_worker_mirrored")
    slow_error = (predicted(0.95) - (8000 * 8100) ** 0.5) / (8000 * 8100) ** 0.5  # +22%: off
    fast_error = (predicted(9.3) - 11800) / 11800  # +5%: right
    assert abs(slow_error) > 0.15 > abs(fast_error)
    sentence = links_text.right(conf, 0.15)
    assert "predict is right within ±15% at 9.3 Gbit/s and off by more at 0.95 Gbit/s" in sentence
    assert f"{slow_error:+.0%} at 0.95 Gbit/s" in sentence and "predicts faster than measured" in sentence


def test_the_table_has_a_row_per_configuration_and_setting(result: links.LinkComparison) -> None:
    rows = links_text.table_rows(result)
    assert len(rows) == 4 and all(len(r) == len(links_text.HEADER) for r in rows)
    mwms = [r for r in rows if "MultiWorker" in r[0]]
    assert mwms[0][1] == "0.95 Gbit/s" and mwms[0][4] == "(the slowest)"
    assert mwms[0][5] == "4 ms of 15.9 ms" and mwms[1][4].endswith("higher")
    assert mwms[0][6] == f"{predicted(0.95):,.0f}"
    ps = [r for r in rows if "ParameterServer" in r[0]]
    assert ps[0][5] == "-" and ps[0][6] == "not modelled" and ps[0][7] == "-"


def test_the_json_holds_the_same_answer(result: links.LinkComparison) -> None:
    obj = json.loads(dumps(links_text.to_json(result, [Path("f.png")])))
    assert [s["label"] for s in obj["settings"]] == ["0.95 Gbit/s", "9.3 Gbit/s"]
    assert obj["settings"][1]["runs"] == ["fast-c", "fast-a", "fast-b"]
    mwms = next(c for c in obj["configurations"] if c["strategy"] == "multi_worker_mirrored")
    assert mwms["answer"] == links_text.answer(by_strategy(result, "multi_worker_mirrored"), 0.05)
    assert mwms["predict"]["baseline_cell_id"] == ONE.id
    slow, fast = mwms["points"]
    assert slow["against_slowest"] is None and fast["against_slowest"]["verdict"] == HIGHER
    assert set(fast["against_slowest"]) >= {"value", "low", "high", "verdict", "runs_to_decide", "predicted"}
    assert fast["allreduce_s"] == 0.6e-3 and fast["runs"] == 3
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
        links.compare(rows, None, model, where="results")
    assert message in str(e.value) and e.value.exit_code == 2
    assert "python -m harness run" in str(e.value) or "slurm-nodes.sh" in str(e.value)


def test_the_figure_is_written(result: links.LinkComparison, tmp_path: Path) -> None:
    paths = links_figure.draw(result, tmp_path)
    assert [p.name for p in paths] == ["compare_links.png", "compare_links.svg"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_a_failed_multi_node_row_is_not_read() -> None:
    rows = [*cluster_rows(), replace(row(MWMS, "slow-c", 1.0, link=0.95, day=7), status=Status.FAILED)]
    conf = by_strategy(links.compare(rows, collectives()), "multi_worker_mirrored")
    assert conf.points[0].side.runs == 2


def test_the_curve_is_predicts_own_model() -> None:
    conf = by_strategy(links.compare(cluster_rows(), collectives()), "multi_worker_mirrored")
    for gbps, eps in conf.modelled.curve[::10]:
        assert eps == pytest.approx(predicted(gbps))
    assert scaling.gradient_bytes("dense") == DENSE_BYTES
