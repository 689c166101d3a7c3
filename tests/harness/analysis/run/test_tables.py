"""Tests of harness.summary."""

from __future__ import annotations

import io
import re

import pytest

from harness.analysis.run.tables import FOOTNOTE, fixed_width, logical_note, render_table, summary_table
from harness.contract.columns import unflatten
from harness.contract.records import CellRow

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def columns(monkeypatch):
    """Sets the terminal width rich sees; a colour terminal whatever the environment."""
    monkeypatch.setenv("TERM", "xterm")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    return lambda n: monkeypatch.setenv("COLUMNS", str(n))


def _row(**kw):
    base = {
        "model": "cnn",
        "strategy": "mirrored",
        "cross_device_ops": "auto",
        "replicas": 1,
        "workers": 1,
        "per_replica_batch": 64,
        "status": "ok",
        "reason": "",
    }
    return unflatten(CellRow, {**base, **kw})


def test_summary_table_rows():
    rows = [
        _row(
            strategy="default",
            cross_device_ops="none",
            examples_per_sec=12345.6,
            examples_per_sec_ci_low=12000.0,
            examples_per_sec_ci_high=12500.0,
            cv_between_processes=0.0123,
            cv_within_process=0.01,
            scaling_efficiency=1.0,
        ),
        _row(
            replicas=2,
            examples_per_sec=18000.0,
            examples_per_sec_ci_low=17500.4,
            examples_per_sec_ci_high=18600.0,
            cv_between_processes=0.05,
            cv_within_process=0.01,
            scaling_efficiency=0.75,
            step_s=0.009,
            parts_step_s=0.01,
            compute_s=0.003,
            allreduce_s=0.006,
            input_s=0.0001,
            dispatch_s=0.0001,
            bound="communication",
        ),
        _row(
            model="dense",
            cross_device_ops="nccl",
            replicas=2,
            status="unsupported",
            reason="NcclAllReduce has no CPU kernel",
        ),
        _row(
            replicas=2,
            per_replica_batch=32,
            status="failed",
            reason="worker died: signal 9 " + "x" * 100,
        ),
    ]
    lines = summary_table(rows).splitlines()
    assert len(lines) == 2 + len(rows)
    assert lines[0].split()[:3] == ["model", "configuration", "examples/s"]
    assert set(lines[1]) == {"-"}
    ok1, ok2, unsup, failed = lines[2:]
    assert ok1.split() == [
        "cnn",
        "no",
        "distribution",
        "strategy",
        "12,346",
        "12,000..12,500",
        "-",
        "1.2%",
        "1.00",
        "-",
        "ok",
    ]
    assert ok2.split() == [
        "cnn",
        "MirroredStrategy",
        "on",
        "2",
        "replicas",
        "18,000",
        "17,500..18,600",
        "-",
        "5.0%",
        "0.75",
        "communication",
        "60%",
        "ok",
    ]
    assert unsup.split()[:11] == [
        "dense",
        "MirroredStrategy",
        "on",
        "2",
        "replicas",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
    ]
    assert unsup.endswith("unsupported: NcclAllReduce has no CPU kernel")
    assert "MirroredStrategy on 2 replicas, batch 32 per replica" in failed  # labels differ where rows do
    assert "failed: worker died: signal 9" in failed
    assert failed.endswith("x" * (60 - len("worker died: signal 9 ")))  # reason cut at 60 chars
    # columns line up: every line has the same prefix width before the status
    assert len({line.index("ok") for line in (ok1, ok2)}) == 1


def test_summary_table_says_no_verdict_where_a_part_exceeds_the_step():
    parts = {
        "parts_step_s": 0.0672,
        "compute_s": 0.1163,
        "allreduce_s": 0.0,
        "input_s": 0.00004,
        "dispatch_s": 0.00002,
    }
    lines = summary_table(
        [_row(examples_per_sec=100.0, bound=None, **parts), _row(examples_per_sec=100.0, bound=None)]
    ).splitlines()
    assert "no verdict (compute 173%)" in lines[2]
    assert lines[3].split()[-2:] == ["-", "ok"]  # no parts: nothing to say


def test_summary_table_gives_a_gpu_row_s_profiled_bound_and_share():
    # measured on an H200 (2026-11-26): the CNN at batch 256, 1.87 ms an update, the GPU idle 66%
    profiled = {
        "profiled_step_s": 0.00187,
        "device_s": 0.000393,
        "collective_s": 0.0,
        "input_wait_s": 0.000238,
        "host_s": 0.001239,
    }
    line = summary_table([_row(examples_per_sec=1e5, bound="host", **profiled)]).splitlines()[2]
    assert "host 66%" in line


def test_the_logical_devices_note_names_gpus_or_cpus():
    gpu = _row(logical_devices=True, device_kind="GPU")
    cpu = _row(logical_devices=True, device_kind="CPU")
    assert logical_note([_row()]) is None
    assert "logical GPUs carved from one GPU" in (logical_note([gpu]) or "")
    assert "logical CPU devices" in (logical_note([cpu, gpu]) or "")


def test_summary_table_missing_and_nan_numbers():
    lines = summary_table(
        [_row(examples_per_sec=100.0, cv_between_processes=float("nan"), cv_within_process=0.01)]
    ).splitlines()
    fields = lines[2].split()
    # MirroredStrategy on 1 replica: no CI, no processes, cv NaN, no efficiency
    assert fields[5:10] == ["100", "-..-", "-", "-", "-"]


def test_summary_table_empty():
    lines = summary_table([]).splitlines()
    assert len(lines) == 2 and "examples/s" in lines[0]


def test_footnote_formats():
    text = FOOTNOTE.format(repeats=5, window_s=0.6, processes=3, max_processes=5, unstable_cv=0.1)
    assert "median of 5 timed windows of ~0.6 s" in text and "3 passes" in text


def test_summary_marks_oversubscribed_rows_and_multi_worker_options():
    table = summary_table(
        [
            _row(
                strategy="multi_worker_mirrored",
                cross_device_ops="none",
                communication="ring",
                workers=2,
                examples_per_sec=9000.0,
                examples_per_sec_ci_low=8000.0,
                examples_per_sec_ci_high=9500.0,
                cv_between_processes=0.01,
                cv_within_process=0.01,
                oversubscribed=True,
            ),
            _row(
                examples_per_sec=7000.0,
                examples_per_sec_ci_low=6000.0,
                examples_per_sec_ci_high=8000.0,
                cv_between_processes=0.01,
                cv_within_process=0.01,
                oversubscribed=False,
            ),
        ]
    )
    lines = table.splitlines()
    assert "MultiWorkerMirroredStrategy on 2 workers" in lines[2] and "9,000*" in lines[2]
    assert "7,000*" not in lines[3] and "7,000" in lines[3]


def _rows():
    return [
        _row(
            strategy="default",
            cross_device_ops="none",
            examples_per_sec=12345.6,
            examples_per_sec_ci_low=12000.0,
            examples_per_sec_ci_high=12500.0,
            cv_between_processes=0.0123,
            cv_within_process=0.01,
            scaling_efficiency=1.0,
        ),
        _row(
            replicas=2,
            examples_per_sec=18000.0,
            examples_per_sec_ci_low=17500.4,
            examples_per_sec_ci_high=18600.0,
            cv_between_processes=0.05,
            cv_within_process=0.01,
            scaling_efficiency=0.75,
            step_s=0.009,
            parts_step_s=0.01,
            compute_s=0.003,
            allreduce_s=0.006,
            input_s=0.0001,
            dispatch_s=0.0001,
            bound="communication",
        ),
        _row(
            model="dense",
            cross_device_ops="nccl",
            replicas=2,
            status="unsupported",
            reason="NcclAllReduce has no CPU kernel",
        ),
    ]


def test_plain_table_is_fixed_width_text():
    header, rows = ("cell", "examples/s", "status"), [("a/b", "1,000", "ok"), ("c", "-", "failed: x")]
    text = render_table(header, rows, stream=io.StringIO())
    assert text == fixed_width([header, *rows])
    assert text.splitlines()[2] == "a/b   1,000       ok"
    assert "\x1b" not in text and "\r" not in text
    assert render_table(header, rows, title="T", indent=2, rule=False, force_terminal=False).splitlines() == [
        "  T",
        "  cell  examples/s  status",
        "  a/b   1,000       ok",
        "  c     -           failed: x",
    ]


def test_plain_unless_the_stream_is_a_terminal(columns):
    columns(200)
    assert "\x1b" not in summary_table(_rows(), stream=io.StringIO())
    assert "\x1b" not in summary_table(_rows(), stream=FakeTty(), force_terminal=False)
    assert "\x1b" in summary_table(_rows(), stream=FakeTty())


def test_terminal_table_same_values(columns):
    columns(200)
    text = summary_table(_rows(), force_terminal=True)
    assert "\x1b[1m" in text  # bold header
    lines = ANSI.sub("", text).splitlines()
    assert lines[0].split()[:3] == ["model", "configuration", "examples/s"]
    assert set(lines[1]) == {"─"}
    assert lines[2].split() == [
        "cnn",
        "no",
        "distribution",
        "strategy",
        "12,346",
        "12,000..12,500",
        "-",
        "1.2%",
        "1.00",
        "-",
        "ok",
    ]
    assert lines[4].split()[:11] == [
        "dense",
        "MirroredStrategy",
        "on",
        "2",
        "replicas",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
    ]
    # numbers right-aligned: the examples/s column ends where its header ends
    assert lines[2].index("12,346") + len("12,346") == lines[0].index("examples/s") + len("examples/s")


def test_terminal_table_fits_the_width_by_wrapping_text_only(columns):
    columns(120)
    lines = ANSI.sub("", summary_table(_rows(), force_terminal=True)).splitlines()
    assert max(map(len, lines)) <= 120
    body = "\n".join(lines)
    for value in ("12,000..12,500", "17,500..18,600"):
        assert value in body  # never broken
    assert "NcclAllReduce" in body


def test_terminal_table_too_wide_keeps_rows_whole(columns):
    columns(40)
    lines = ANSI.sub("", summary_table(_rows(), force_terminal=True)).splitlines()
    assert any(line.rstrip().endswith("unsupported: NcclAllReduce has no CPU kernel") for line in lines)
    assert len([line for line in lines if line.startswith(("cnn", "dense"))]) == 3  # rows whole


def test_terminal_table_title_and_indent(columns):
    columns(80)
    text = ANSI.sub("", render_table(("a", "b"), [("x", "1")], title="T", indent=2, force_terminal=True))
    lines = text.splitlines()
    assert lines[0].strip() == "T" and all(line.startswith("  ") for line in lines)
    assert lines[-1].split() == ["x", "1"]


def test_summary_shows_the_spread_flags_unstable_and_efficiency_near_one():
    table = summary_table(
        [
            _row(
                strategy="mirrored",
                cross_device_ops="auto",
                replicas=2,
                examples_per_sec=9000.0,
                examples_per_sec_ci_low=8000.0,
                examples_per_sec_ci_high=9500.0,
                cv_between_processes=0.15,
                cv_within_process=0.01,
                unstable=True,
                scaling_efficiency=0.95,
                scaling_efficiency_ci_low=0.8,
                scaling_efficiency_ci_high=1.1,
            ),
        ]
    )
    line = table.splitlines()[2]
    assert "15.0% unstable" in line and "0.95~" in line
