"""predict's query (harness.analysis.scale.scaling.Query, predictions): the rows it scales and compares
with are those of the efficiency baseline's key, and its baseline is measured on one node. Rows
built like a run's (harness.results.measurement.cell_row). No TensorFlow."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.analysis.scale import scaling
from harness.contract.records import Axes
from harness.errors import HarnessError
from harness.results.references import find_baseline
from harness.spec.axes import BASELINE, key_axes
from harness.spec.cell import Cell
from tests.harness.analysis.scale.test_links import row
from tests.harness.analysis.scale.test_scaling_interval import collectives

ONE = Cell(model="dense", strategy="mirrored")
TWO = Cell(model="dense", strategy="mirrored", replicas=2, cross_device_ops="auto")


def query(config: Cell = ONE, counts: tuple[int, ...] = (1, 2)) -> scaling.Query:
    return scaling.Query(config, counts, "auto")


def test_the_key_is_the_efficiency_baselines_own() -> None:
    names = [a.name for a in key_axes(BASELINE)]
    assert {"xla", "data", "loss", "optimizer", "model", "strategy", "tenants"} <= set(names)
    two = row(TWO, "r", 9000.0, nodes=1)
    base = row(ONE, "r", 6400.0, nodes=1)
    assert scaling.baseline_key(two.cell) == scaling.baseline_key(ONE) == scaling.baseline_key(base.cell)
    assert find_baseline(two, [base]) is base  # the same rows match for results.references
    for axis, value in (("xla", "on"), ("optimizer", "adam"), ("data", "mnist"), ("loss", "mse")):
        other = replace(ONE, **{axis: value})
        assert scaling.baseline_key(other) != scaling.baseline_key(ONE), axis
        assert find_baseline(two, [row(other, "r", 1.0, nodes=1)]) is None, axis


def test_config_of_a_row_is_its_one_device_cell() -> None:
    two = row(TWO, "r", 9000.0).cell
    assert isinstance(two, Axes)
    assert scaling.config_of(two) == ONE
    mwms = row(Cell(model="dense", strategy="multi_worker_mirrored", workers=2), "r", 1.0).cell
    assert (
        scaling.config_of(mwms).id
        == "dense/multi_worker_mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak"
    )


def test_a_row_differing_only_in_xla_or_optimizer_is_never_the_baseline() -> None:
    right = row(ONE, "a", 6400.0, nodes=1, day=1)
    rows = [
        right,
        row(replace(ONE, xla="on"), "b", 9999.0, nodes=1, day=2),
        row(replace(ONE, optimizer="adam"), "c", 8888.0, nodes=1, day=3),
        row(replace(TWO, xla="on"), "d", 7777.0, nodes=1, day=4),
    ]
    assert scaling.find_one_device(rows, ONE) is right
    found = scaling.predictions(rows, query(), collectives("mirrored", "auto"))
    assert found.baseline is right
    # the measured figure at 2 replicas is not the XLA row's: there is none of this key
    assert found.lines[0].measured is not None and found.lines[0].measured.value == 6400.0
    assert found.lines[1].measured is None


def test_the_baseline_is_measured_on_one_node_where_there_is_one() -> None:
    local = row(ONE, "a", 6400.0, nodes=1, day=1)
    old = row(ONE, "b", 6300.0, nodes=1, day=2)  # newer, on one node too
    cluster = row(ONE, "c", 5000.0, nodes=2, link=9.4, day=3)
    assert scaling.find_one_device([local, cluster], ONE) is local
    assert scaling.find_one_device([local, old, cluster], ONE) is old
    assert scaling.find_one_device([cluster], ONE) is cluster  # preferred, not required
    assert scaling.predictions([cluster, local], query(), collectives("mirrored", "auto")).baseline is local


def test_predictions_at_each_count_on_one_node_only() -> None:
    cluster = row(TWO, "b", 99000.0, nodes=2, link=9.4, day=2)  # across nodes: compare-links' own
    rows = [row(ONE, "a", 6400.0, nodes=1, day=1), row(TWO, "a", 12000.0, nodes=1, day=1), cluster]
    found = scaling.predictions(rows, query(counts=(1, 2, 4)), collectives("mirrored", "auto"))
    assert [line.prediction.devices for line in found.lines] == [1, 2, 4]
    p = found.lines[1].prediction
    assert found.lines[1].measured is not None and found.lines[1].measured.value == 12000.0
    assert found.lines[1].error == pytest.approx((p.examples_per_sec - 12000) / 12000)
    assert found.cost.alpha_s == pytest.approx(50e-6) and found.cost.beta_s_per_byte == pytest.approx(1e-9)


def test_a_missing_baseline_says_what_was_looked_for_and_how_to_measure_it() -> None:
    config = Cell(model="dense", strategy="multi_worker_mirrored", batch=32, xla="on")
    with pytest.raises(HarnessError) as e:
        scaling.predictions([row(ONE, "a", 6400.0)], query(config), where="results")
    text = str(e.value)
    assert text.startswith("no measured 1-device cell of dense multi_worker_mirrored (")
    assert "XLA" in text and "batch 32" in text and "under results" in text
    assert (
        "`python -m harness run --model dense --strategy multi_worker_mirrored --workers 1 --batch 32 "
        "--jit-compile on`" in text
    )
