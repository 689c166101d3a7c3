"""Findings: the fastest configuration and ties, and each knob's effect, on literal rows."""

from __future__ import annotations

from harness.analysis import findings
from harness.contract.columns import Estimate, unflatten
from harness.contract.records import CellRow, RatioRow
from harness.formulas import stats
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


def test_fastest_and_the_configurations_tied_with_it():
    best, tied = findings.fastest(ROWS, "cnn")
    assert best.cell.accum_steps == 4 and tied == []
    rows = ROWS + [_row(1390.0, [1300.0, 1390.0, 1480.0], accum_steps=8)]
    best, tied = findings.fastest(rows, "cnn")
    assert [r.cell.accum_steps for r, _ in tied] == [4 if best.cell.accum_steps == 8 else 8]


def test_each_knob_compares_rows_equal_but_for_it():
    effects = findings.all_effects(ROWS)
    acc = effects["gradient accumulation"]
    assert [(f.reference, f.changed) for f in acc] == [("1", "4")]
    assert acc[0].ratio.value == 1.4 and acc[0].ratio.distinguishable()
    assert acc[0].verdict.startswith("1.40x [")
    loop = effects["training loop"][0]
    assert (loop.reference, loop.changed) == ("ctl", "fit")
    assert loop.verdict.endswith(": undecided")  # 1.01x with a wide CI
    ops = effects["cross-device ops"][0]
    assert (ops.reference, ops.changed) == ("auto", "hierarchical_copy")
    assert ops.verdict.endswith((": undecided", ": equivalent"))
    # replicas: the 1-replica cell (op none) against each 2-replica op
    reps = effects["replicas"]
    assert sorted(f.changed for f in reps) == ["2", "2"] and all(f.reference == "1" for f in reps)
    assert all(f.ratio.value < 0.7 and f.ratio.distinguishable() for f in reps)


def test_describe_without_ci_and_invalid_rows_are_left_out():
    assert "no CI" in findings.describe(stats.Ratio(1.2, float("nan"), float("nan"), 1, 1))
    page = findings.render_html(ROWS)
    assert "fastest" in page and "gradient accumulation" in page and "500" not in page


def test_every_relation_has_a_title_in_the_report() -> None:
    from harness.analysis.findings import RELATION_TITLES, RELATION_WORDS
    from harness.spec.groups import Relation

    assert (
        set(RELATION_TITLES) == set(Relation) == set(RELATION_WORDS)
    )  # a relation without one would drop out of the report


def test_a_race_head_says_fastest_only_when_every_contender_is_lower() -> None:
    from harness.analysis.findings import turns_html

    rows = [
        unflatten(CellRow, {"cell_id": k, "model": "cnn", "strategy": s, "examples_per_sec": 100.0})
        for k, s in (("a", "default"), ("b", "mirrored"), ("c", "central_storage"))
    ]

    def race(verdicts: tuple[str, str]) -> list[RatioRow]:
        return [
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
            for s, v in zip(("b", "c"), verdicts, strict=True)
        ]

    assert "cnn: fastest default" in turns_html(race(("lower", "lower")), rows)
    assert "cnn: leading (not decided against every contender) default" in turns_html(
        race(("lower", "undecided")), rows
    )
