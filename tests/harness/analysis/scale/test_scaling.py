"""The scaling model on literal numbers: the alpha-beta cost, its fit, and the step at n devices."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.analysis.scale import scaling
from harness.contract.columns import unflatten
from harness.contract.records import CellRow


def test_ring_cost() -> None:
    # 10 Gb/s = 1.25e9 B/s: beta = 0.8 ns/B; 1 MiB between 2 workers: 2(1) x 5 us + 1 x 1 MiB x 0.8 ns
    cost = scaling.AlphaBeta(5e-6, 8e-10, "link")
    assert cost.beta_s_per_byte == pytest.approx(8e-10)
    assert cost.time_s(2, 2**20) == pytest.approx(10e-6 + 2**20 * 8e-10)  # 848.9 us
    assert cost.time_s(4, 2**20) == pytest.approx(6 * 5e-6 + 1.5 * 2**20 * 8e-10)
    assert cost.time_s(1, 2**20) == 0.0
    assert cost.bandwidth_gbps == pytest.approx(10)


def test_the_fit_recovers_a_planted_alpha_and_beta() -> None:
    planted = scaling.AlphaBeta(40e-6, 1e-9, "planted")
    points = [(n, m, planted.time_s(n, m)) for n in (2, 3, 4) for m in (4096, 65536, 2**20, 2**24)]
    fit = scaling.fit_alpha_beta(points, "test")
    assert fit.alpha_s == pytest.approx(40e-6, rel=1e-6)
    assert fit.beta_s_per_byte == pytest.approx(1e-9, rel=1e-6)
    assert fit.rel_rms == pytest.approx(0, abs=1e-9) and fit.source == "test: 12 rows"
    with pytest.raises(ValueError, match="2 or more"):
        scaling.fit_alpha_beta([(2, 4096, 1e-4)])


def test_gradient_bytes_are_four_per_parameter() -> None:
    assert scaling.gradient_bytes("cnn") == 4 * 34_826
    assert scaling.gradient_bytes("dense") == 4 * 101_770


def test_devices_that_share_a_hosts_cores_slow_each_other() -> None:
    # the 1-device cell used both cores of a 2-core host: 2 devices take twice its step, 4 four times
    shared = scaling.Baseline(step_s=0.010, effective_batch=64, cores_used=2, host_cores=2, shares_cores=True)
    p = scaling.predict(shared, 2, 0.001, "x")
    assert p.step_s == pytest.approx(0.021) and p.examples_per_sec == pytest.approx(128 / 0.021)
    assert p.efficiency == pytest.approx(0.010 / 0.021) and p.allreduce_share == pytest.approx(1 / 21)
    assert scaling.predict(shared, 4, 0.0, "x").step_s == pytest.approx(0.040)
    # a host with 16 cores and a cell that used 4: up to 4 devices fit
    roomy = scaling.Baseline(0.010, 64, 4, 16, True)
    assert [roomy.share(n) for n in (1, 4, 8)] == [1.0, 1.0, 2.0]
    own = scaling.Baseline(0.010, 64, 2, 2, shares_cores=False)
    gpu = scaling.predict(own, 8, 0.002, "x")
    assert gpu.step_s == pytest.approx(0.012) and gpu.efficiency == pytest.approx(0.010 / 0.012)
    one = scaling.predict(own, 1, 0.5, "x")
    assert one.step_s == 0.010 and one.allreduce_from == "none" and one.efficiency == 1.0


def test_a_measured_gradient_all_reduce_wins_over_the_fit() -> None:
    cost = scaling.AlphaBeta(5e-6, 8e-10, "link 10 Gb/s")
    assert scaling.allreduce_time(2, "cnn", cost, {2: 3e-4}) == (3e-4, "measured (cnn gradients)")
    seconds, source = scaling.allreduce_time(3, "cnn", cost, {2: 3e-4})
    assert seconds == pytest.approx(cost.time_s(3, 4 * 34_826)) and source.startswith("link")
    assert scaling.error(110.0, 100.0) == pytest.approx(0.10)


def test_report_predictions_pair_each_multi_device_cell_with_its_prediction() -> None:
    base = {
        "model": "cnn",
        "strategy": "mirrored",
        "workers": 1,
        "status": "ok",
        "communication": "none",
        "device_kind": "CPU",
        "host_cores": 2,
        "cores_per_worker": 2,
    }
    one = {
        **base,
        "cell_id": "one",
        "replicas": 1,
        "cross_device_ops": "none",
        "effective_batch": 64,
        "examples_per_sec": 6400.0,
        "baseline_cell_id": "one",
    }
    two = {
        **base,
        "cell_id": "two",
        "replicas": 2,
        "cross_device_ops": "auto",
        "effective_batch": 128,
        "examples_per_sec": 6000.0,
        "baseline_cell_id": "one",
    }
    collectives = _collectives()
    (line,) = scaling.report_predictions(_typed(one, two), collectives).itertuples()
    assert line.cell_id == "two" and line.devices == 2
    assert line.predicted == pytest.approx(128 / 0.021)  # 2 x 10 ms shared + 1 ms measured
    assert line.error == pytest.approx((128 / 0.021 - 6000) / 6000)
    assert scaling.report_predictions(_typed(one, two), collectives.iloc[0:0]).empty
    assert scaling.report_predictions(_typed(one, two), None).empty


def _typed(*rows: dict[str, object]) -> list[CellRow]:
    return [unflatten(CellRow, r) for r in rows]


def _collectives(**extra: object) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "status": "ok",
                "strategy": "mirrored",
                "op": "auto",
                "devices": 2,
                "payload": p,
                "bytes": b,
                "time_s": t,
                "timestamp": "t",
                **extra,
            }
            for p, b, t in (("bytes", 4096, 1e-4), ("bytes", 2**20, 6e-4), ("cnn", 139_304, 1e-3))
        ]
    )


def test_the_table_cost_needs_two_times_on_this_machine_and_says_how_to_get_them() -> None:
    from harness.errors import HarnessError

    columns = {"device_kind": "CPU", "device_name": "Xeon", "host_cores": 2}
    here = unflatten(CellRow, columns)
    epyc = unflatten(CellRow, {**columns, "device_name": "EPYC"})
    table = _collectives(device_kind="CPU", device_name="Xeon", host_cores=2)
    cost, own, _ = scaling.cost_from_table(table, "mirrored", "auto", "cnn", here)
    assert cost.source == "alpha-beta fit of mirrored[auto]: 3 rows" and own == {2: 1e-3}
    with pytest.raises(
        HarnessError,
        match=r"no all-reduce times of mirrored \[nccl\].*--sweep "
        "collectives",
    ):
        scaling.cost_from_table(table, "mirrored", "nccl", "cnn", here)
    with pytest.raises(
        HarnessError,
        match=r"measured on Xeon \(2 cores\), not on the 1-device cell's machine "
        r"\(EPYC, 2 cores\)",
    ):
        scaling.cost_from_table(table, "mirrored", "auto", "cnn", epyc)
    with pytest.raises(HarnessError, match=r"1 all-reduce time\(s\) .* needs 2 or more"):
        scaling.cost_from_table(table.iloc[[0]], "mirrored", "auto", "cnn", here)
    # rows that do not say where they were measured are kept
    unknown = table.assign(device_name=pd.Series([None] * 3, dtype="string"))
    assert len(scaling.same_machine(unknown, epyc)) == 3


def test_report_predictions_keep_weak_scaling_rows_of_the_same_machine_with_their_ci() -> None:
    base = {
        "model": "cnn",
        "strategy": "mirrored",
        "workers": 1,
        "status": "ok",
        "scaling": "weak",
        "communication": "none",
        "device_kind": "CPU",
        "device_name": "Xeon",
        "host_cores": 2,
        "cores_per_worker": 2,
        "baseline_cell_id": "one",
        "per_replica_batch": 64,
        "accum_steps": 1,
        "loop": "ctl",
        "steps_per_execution": 10,
        "precision": "float32",
    }
    one = {
        **base,
        "cell_id": "one",
        "replicas": 1,
        "cross_device_ops": "none",
        "effective_batch": 64,
        "examples_per_sec": 6400.0,
    }
    two = {
        **base,
        "cell_id": "two",
        "replicas": 2,
        "cross_device_ops": "auto",
        "effective_batch": 128,
        "examples_per_sec": 6000.0,
        "examples_per_sec_ci_low": 5500.0,
        "examples_per_sec_ci_high": None,
    }
    strong = {**two, "cell_id": "strong", "scaling": "strong"}
    table = _collectives(device_kind="CPU", device_name="Xeon", host_cores=2)
    (line,) = scaling.report_predictions(_typed(one, two, strong), table).itertuples()
    assert line.cell_id == "two" and line.series == "mirrored[auto]"
    assert line.baseline == 6400.0 and line.config == "b64/acc1/ctl/spe10/float32"
    assert (line.measured_ci_low, line.measured_ci_high) == (5500.0, 6000.0)
    elsewhere = table.assign(device_name="EPYC")
    assert scaling.report_predictions(_typed(one, two), elsewhere).empty


def test_the_report_figure_draws_predicted_beside_measured(tmp_path: Path) -> None:
    from harness.analysis.scale import scaling_figure

    lines = pd.DataFrame(
        [
            {
                "model": "cnn",
                "series": "mirrored[auto]",
                "config": "b64/acc1/ctl/spe10/float32",
                "baseline": 6400.0,
                "devices": n,
                "measured": m,
                "measured_ci_low": m * 0.9,
                "measured_ci_high": m * 1.1,
                "predicted": p,
            }
            for n, m, p in ((2, 6000.0, 6100.0), (4, 5000.0, 5600.0))
        ]
    )
    paths = scaling_figure.predicted_vs_measured(lines, tmp_path)
    assert [p.name for p in paths] == ["predicted_vs_measured.png", "predicted_vs_measured.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert scaling_figure.predicted_vs_measured(lines.iloc[0:0], tmp_path / "none") == []


def test_the_predict_figure_cuts_whiskers_of_a_two_process_ci_and_logs_1_to_64(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.analysis.run import plots
    from harness.analysis.scale import scaling_figure

    captured = []
    real_save = plots.save

    def keep(fig, out, name):  # type: ignore[no-untyped-def]
        captured.append(
            (fig.axes[0].get_ylim(), fig.axes[0].get_xscale(), fig.axes[0].get_legend_handles_labels()[1])
        )
        return real_save(fig, out, name)

    monkeypatch.setattr(plots, "save", keep)
    lines = pd.DataFrame(
        [
            {
                "devices": n,
                "predicted_examples_per_sec": p,
                "predicted_low": p / 1.5,
                "predicted_high": p * 1.5,
                "measured_examples_per_sec": m,
                "measured_ci_low": lo,
                "measured_ci_high": hi,
                "error": e,
            }
            for n, p, m, lo, hi, e in (
                (1, 5551.0, 5551.0, 327.0, 89_680.0, 0.0),
                (2, 4918.0, 4265.0, 120.0, 140_958.0, 0.15),
                (64, 4552.0, None, None, None, None),
            )
        ]
    )
    paths = scaling_figure.prediction_figure(lines, tmp_path / "p", "t")
    assert [p.name for p in paths] == ["p.png", "p.svg"]
    ((ylim, xscale, labels),) = captured
    assert ylim == (0, 2 * 5551.0) and xscale == "log"
    assert labels == ["predicted", "predicted, 95% interval", "measured (95% CI, whiskers cut)"]


def test_gradient_bytes_come_from_the_workers_count_or_the_mnist_models_hand_list() -> None:
    from harness.analysis.scale.scaling import gradient_bytes
    from harness.errors import HarnessError

    assert gradient_bytes("resnet50", unflatten(CellRow, {"gradient_bytes": 94220328})) == 94220328
    before = unflatten(CellRow, {"gradient_bytes": None})  # a row before the count
    assert gradient_bytes("cnn", before) == 4 * 34826
    with pytest.raises(HarnessError, match="resnet50's gradients is unknown"):
        gradient_bytes("resnet50", before)
