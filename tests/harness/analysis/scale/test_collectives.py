"""nccl-tests' bandwidths on literal numbers, and the collectives table's text."""

from __future__ import annotations

import pytest

from harness.analysis.scale.collectives import table_lines
from harness.formulas.bandwidth import algbw_gbps, busbw_gbps


def test_algbw_is_bytes_over_time() -> None:
    assert algbw_gbps(1e9, 0.5) == pytest.approx(2.0)
    assert algbw_gbps(4 * 2**20, 1e-3) == pytest.approx(4.194304)


@pytest.mark.parametrize("n, factor", [(2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_is_algbw_times_2_n_minus_1_over_n(n: int, factor: float) -> None:
    # 1 GB in 0.5 s: algbw 2 GB/s; a ring moves 2(n-1)/n of it over each link
    assert busbw_gbps(1e9, 0.5, n) == pytest.approx(2.0 * factor)


def test_table_lines() -> None:
    rows = [
        {
            "strategy": "mirrored",
            "op": "auto",
            "replicas": 2,
            "workers": 1,
            "payload": "bytes",
            "bytes": 65536,
            "time_s": 2.5e-4,
            "time_s_ci_low": 2e-4,
            "time_s_ci_high": 3e-4,
            "busbw_gbps": 0.262,
            "status": "ok",
        },
        {
            "strategy": "mirrored",
            "op": "nccl",
            "replicas": 2,
            "workers": 1,
            "payload": "",
            "status": "unsupported",
            "reason": "NcclAllReduce has no CPU kernel",
        },
    ]
    header, lines = table_lines(rows)
    assert header[4] == "time us [95% CI]"
    assert lines[0] == ("mirrored[auto]", "2x1", "bytes", "64 KiB", "250.0 [200.0..300.0]", "0.262", "ok")
    assert lines[1][2:6] == ("-", "-", "-", "-")
    assert lines[1][6] == "unsupported: NcclAllReduce has no CPU kernel"
