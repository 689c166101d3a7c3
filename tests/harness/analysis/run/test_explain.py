"""The seed questions answered from planted rows, and the breakdown table."""

from __future__ import annotations

from typing import Any

from harness.analysis.run import explain
from harness.contract.columns import Estimate, flatten, unflatten
from harness.contract.records import CellRow, RatioRow
from harness.spec.groups import Relation

BASE = {
    "model": "cnn",
    "data": "synthetic",
    "strategy": "mirrored",
    "cross_device_ops": "auto",
    "communication": "none",
    "workers": 1,
    "ps": 0,
    "tenants": 1,
    "per_replica_batch": 64,
    "loop": "ctl",
    "steps_per_execution": 10,
    "precision": "float32",
    "scaling": "weak",
    "status": "ok",
    "reason": "",
    "logical_devices": True,
}


def _row(
    replicas: int, accum: int, eps: list[float], parts: tuple[float, float, float, float], **kw: Any
) -> dict[str, Any]:
    effective = 64 * replicas * accum
    median = sorted(eps)[len(eps) // 2]
    compute, allreduce, inp, dispatch = parts
    step = effective / median
    return {
        **BASE,
        "replicas": replicas,
        "accum_steps": accum,
        "effective_batch": effective,
        "cell_id": f"cnn/mirrored[auto]/r{replicas}w1/acc{accum}",
        "examples_per_sec": median,
        "process_examples_per_sec": eps,
        "step_s": step,
        "parts_step_s": step,
        "compute_s": compute,
        "allreduce_s": allreduce,
        "input_s": inp,
        "dispatch_s": dispatch,
        "overlap": (sum(parts) - step) / step,
        "bound": "compute",
        **kw,
    }


def _rows() -> list[CellRow]:
    one = _row(1, 1, [6400.0, 6300.0, 6500.0], (0.009, 0.0, 0.0002, 0.0001), scaling_efficiency=1.0)
    one["baseline_cell_id"] = one["cell_id"]
    two = _row(
        2,
        1,
        [6400.0, 6350.0, 6450.0],
        (0.017, 0.002, 0.0005, 0.0001),
        scaling_efficiency=0.5,
        scaling_efficiency_ci_low=0.48,
        scaling_efficiency_ci_high=0.52,
        baseline_cell_id=one["cell_id"],
    )
    acc = _row(2, 4, [7680.0, 7600.0, 7700.0], (0.068, 0.002, 0.002, 0.0001))
    return [unflatten(CellRow, r) for r in (one, two, acc)]


def test_breakdown_table_gives_milliseconds_and_shares() -> None:
    table = explain.breakdown_table(_rows())
    assert list(table["step ms"]) == ["10", "20", "66.7"]
    two = table.iloc[1]
    assert two["compute ms (share)"] == "17 (85%)" and two["all-reduce ms (share)"] == "2 (10%)"
    assert two["overlap or unexplained"] == "unexplained 2%"  # (19.6 - 20) / 20


def test_a_gpu_row_s_breakdown_is_its_profiled_window() -> None:
    gpu = {
        **BASE,
        "replicas": 1,
        "accum_steps": 1,
        "cell_id": "cnn/default/r1w1",
        "examples_per_sec": 1e5,
        "profiled_step_s": 0.002,
        "device_s": 0.0005,
        "collective_s": 0.0,
        "input_wait_s": 0.0002,
        "host_s": 0.0013,
        "overlap": 0.0,
        "bound": "host",
    }
    (line,) = explain.breakdown_table([unflatten(CellRow, gpu)]).to_dict("records")
    assert line["step ms"] == "2" and line["host ms (share)"] == "1.3 (65%)"
    assert line["device ms (share)"] == "0.5 (25%)" and line["bound"] == "host"


def test_what_a_second_replica_buys_splits_the_growth_of_the_step() -> None:
    (text,) = explain.what_scaling_buys(_rows())
    assert text.startswith("cnn, MirroredStrategy on 2 replicas: efficiency 0.50 [0.48, 0.52]")
    # 10 -> 20 ms, each part on one device and on two (every figure a value of the rows)
    assert (
        "from 10 to 20 ms: compute 9 -> 17, all-reduce 0 -> 2, input 0.2 -> 0.5, dispatch 0.1 -> 0.1 ms"
        in text
    )
    assert text.endswith("(unexplained 2%)")  # the step holds 2% more than its parts


def _accumulation(subject: str, reference: str) -> RatioRow:
    return RatioRow(
        relation=Relation.ACCUMULATION,
        subject=subject,
        reference=reference,
        group="g0",
        ratio=Estimate(1.2, 1.1, 1.3),
        scale=1.0,
        instances=4,
        blocks=4,
        turn_s=0.2,
        verdict="higher",
        decided=True,
        dropped_instances=0,
        note="",
        disturbed_blocks=0,
    )


def test_accumulation_is_judged_in_turns_with_the_all_reduce_per_example() -> None:
    rows = _rows()
    by_acc = {r.cell.accum_steps: r.cell.cell_id for r in rows if r.cell.replicas == 2}
    (text,) = explain.does_accumulation_help(rows, [_accumulation(by_acc[4], by_acc[1])])
    assert text.startswith(
        "cnn, MirroredStrategy on 2 replicas, 4 accumulation steps per update against MirroredStrategy "
        "on 2 replicas: 1.200 [1.100, 1.300], 4 instances: higher"
    )
    # 2 ms per 128 examples = 15.6 us; 2 ms per 512 = 3.91 us
    assert text.endswith("all-reduce per example 15.6 -> 3.91 us")


def test_devices_working_names_invalid_cells_and_logical_devices() -> None:
    rows = _rows() + [
        unflatten(
            CellRow,
            {
                **flatten(_rows()[1]),
                "status": "invalid",
                "cell_id": "x",
                "reason": "model variable is a ResourceVariable, not MirroredVariable",
            },
        )
    ]
    answers = explain.devices_working(rows)
    assert answers[0].startswith("2 of 3 multi-device cells were measured and passed every integrity check:")
    assert any("invalid: model variable is a ResourceVariable" in a for a in answers)
    assert "share its cores" in answers[-1]


def test_no_pairs_say_so() -> None:
    one = _rows()[:1]
    assert explain.what_scaling_buys(one) == ["No multi-device cell with a 1-device baseline in this run."]
    assert explain.does_accumulation_help(one, [])[0].startswith("No accumulation comparison")
    assert explain.devices_working(one) == ["No cell of this run has more than one device."]
