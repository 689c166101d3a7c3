"""Findings: the comparisons in turns in words; rows measured separately are never ranked."""

from __future__ import annotations

from harness.analysis.run import findings
from harness.contract.columns import Estimate, unflatten
from harness.contract.records import CellRow, RatioRow
from harness.spec.groups import Relation


def _row(eps, procs, **kw):
    base = {
        "model": "cnn",
        "data": "synthetic",
        "strategy": "mirrored",
        "cross_device_ops": "none",
        "communication": "none",
        "replicas": 1,
        "workers": 1,
        "ps": 0,
        "tenants": 1,
        "per_replica_batch": 64,
        "accum_steps": 1,
        "loop": "ctl",
        "steps_per_execution": 10,
        "precision": "float32",
        "scaling": "weak",
        "status": "ok",
        "examples_per_sec": eps,
        "process_examples_per_sec": procs,
    }
    return unflatten(CellRow, {**base, **kw})


ROWS = [
    _row(1000.0, [990.0, 1000.0, 1010.0]),
    _row(1400.0, [1380.0, 1400.0, 1420.0], accum_steps=4),
    _row(1010.0, [900.0, 1010.0, 1150.0], loop="fit"),
    _row(600.0, [590.0, 600.0, 610.0], replicas=2, cross_device_ops="auto"),
    _row(610.0, [560.0, 610.0, 660.0], replicas=2, cross_device_ops="hierarchical_copy"),
    _row(500.0, [500.0, 510.0, 490.0], status="invalid"),
]


def test_separately_measured_rows_are_never_ranked():
    page = findings.render_html(ROWS)
    assert "ranks nothing" in page and "fastest" not in page


def test_every_relation_has_a_title_in_the_report() -> None:
    from harness.analysis.run.findings import RELATION_TITLES, RELATION_WORDS
    from harness.spec.groups import Relation

    assert (
        set(RELATION_TITLES) == set(Relation) == set(RELATION_WORDS)
    )  # a relation without one would drop out of the report


def test_the_comparisons_in_turns_name_configurations_in_words() -> None:
    rows = [
        unflatten(CellRow, {"cell_id": k, "model": "cnn", "strategy": s, "examples_per_sec": 100.0})
        for k, s in (("a", "default"), ("b", "mirrored"), ("c", "central_storage"))
    ]
    race = [
        RatioRow(
            relation=Relation.FASTEST,
            subject=s,
            reference="a",
            group="r0",
            ratio=Estimate(0.9, 0.8, 0.95),
            scale=1.0,
            instances=5,
            blocks=6,
            turn_s=0.2,
            verdict=v,
            decided=v == "lower",
            dropped_instances=0,
            note="",
            disturbed_blocks=0,
        )
        for s, v in (("b", "lower"), ("c", "undecided"))
    ]
    page = findings.render_html(rows, race)
    assert "cnn: MirroredStrategy against no distribution strategy: 0.900 [0.800, 0.950]" in page
    assert "cnn: CentralStorageStrategy against no distribution strategy" in page and "undecided" in page
