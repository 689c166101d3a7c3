"""Rows of the collectives table from planted process reports."""

from __future__ import annotations

import pytest

from harness.contract.records import Status
from harness.formulas import stats
from harness.results.collectives import MAX_REL_ERROR, TopologyReport, not_measured, topology_rows
from harness.spec.cell import Cell

CELL = Cell(strategy="mirrored", cross_device_ops="auto", replicas=2)
FACTS = {
    "fingerprint": "fp",
    "device_type": "CPU",
    "device_name": "cpu",
    "host_cores": 2,
    "tf_version": "2.21.0",
}


def _process(times: tuple[float, float], error: float = 0.0) -> TopologyReport:
    return TopologyReport(
        status=Status.OK,
        effective_op="CollectiveAllReduce(RING)",
        payloads=(
            {
                "payload": "bytes",
                "tensors": 1,
                "bytes": 4096,
                "time_s": times[0],
                "calls": 100,
                "max_rel_error": 0.0,
            },
            {
                "payload": "cnn",
                "tensors": 6,
                "bytes": 139304,
                "time_s": times[1],
                "calls": 50,
                "max_rel_error": error,
            },
        ),
    )


def test_one_row_per_payload_with_the_median_over_processes_and_its_ci() -> None:
    rows = topology_rows(
        CELL, [_process((1e-4, 5e-4)), _process((2e-4, 6e-4)), _process((1.5e-4, 7e-4))], FACTS
    )
    assert [r["payload"] for r in rows] == ["bytes", "cnn"]
    small = rows[0]
    assert small["time_s"] == 1.5e-4 and small["processes"] == 3
    est = stats.figure([1e-4, 2e-4, 1.5e-4])
    assert (small["time_s_ci_low"], small["time_s_ci_high"]) == pytest.approx((est.low, est.high))
    assert small["algbw_gbps"] == pytest.approx(4096 / 1.5e-4 / 1e9)
    assert small["busbw_gbps"] == pytest.approx(small["algbw_gbps"])  # n = 2: 2(n-1)/n = 1
    assert small["status"] == "ok" and small["op"] == "auto" and small["devices"] == 2
    assert small["effective_op"] == "CollectiveAllReduce(RING)" and small["fingerprint"] == "fp"


def test_a_wrong_sum_makes_the_payload_invalid() -> None:
    rows = topology_rows(CELL, [_process((1e-4, 5e-4), error=0.5)], FACTS)
    assert rows[0]["status"] == "ok"
    assert rows[1]["status"] == "invalid" and "wrong sum" in rows[1]["reason"]
    assert rows[1]["max_rel_error"] == 0.5 > MAX_REL_ERROR
    assert rows[1]["time_s_ci_low"] is None  # one process: no CI


def test_a_failed_process_fails_the_topology_and_unsupported_is_one_row() -> None:
    failed = topology_rows(CELL, [_process((1e-4, 5e-4)), TopologyReport(Status.FAILED, "killed")], FACTS)
    assert len(failed) == 1 and failed[0]["status"] == "failed" and failed[0]["reason"] == "killed"
    assert topology_rows(CELL, [], FACTS)[0]["reason"] == "no process reported"
    row = not_measured(
        Cell(strategy="mirrored", cross_device_ops="nccl", replicas=2),
        FACTS,
        Status.UNSUPPORTED,
        "no NCCL on CPU",
    )
    assert (row["status"], row["op"], row["payload"]) == ("unsupported", "nccl", "")
