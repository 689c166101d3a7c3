"""``predict`` end to end on a small results folder the test writes (cells and collectives)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract.columns import unflatten
from harness.contract.records import CellRow
from harness.results.store import RunFiles
from tests.cli import cli

BASE = {
    "model": "cnn",
    "data": "synthetic",
    "strategy": "mirrored",
    "communication": "none",
    "workers": 1,
    "ps": 0,
    "tenants": 1,
    "per_replica_batch": 64,
    "accum_steps": 1,
    "loop": "ctl",
    "steps_per_execution": 10,
    "precision": "float32",
    "xla": "off",
    "loss": "auto",
    "optimizer": "sgd",
    "tenant_framework": "none",
    "scaling": "weak",
    "status": "ok",
    "reason": "",
    "device_kind": "CPU",
    "host_cores": 2,
    "cores_per_worker": 2,
    "fingerprint": "fp",
    "run_id": "20260101T000000Z-aaaaaa",
    "timestamp": "2026-01-01T00:00:00",
}


def _folder(tmp_path: Path, collectives: bool = True) -> Path:
    """A run's mirrored cnn at 1 and 2 replicas, with its all-reduce times unless not ``collectives``."""
    out = tmp_path / "results"
    files = RunFiles(out, "2026-01-01", BASE["run_id"])
    one = {
        **BASE,
        "cell_id": "cnn/mirrored/r1w1",
        "replicas": 1,
        "cross_device_ops": "none",
        "effective_batch": 64,
        "examples_per_sec": 6400.0,
    }  # step 10 ms
    two = {
        **BASE,
        "cell_id": "cnn/mirrored[auto]/r2w1",
        "replicas": 2,
        "cross_device_ops": "auto",
        "effective_batch": 128,
        "examples_per_sec": 6000.0,
        "examples_per_sec_ci_low": 5800.0,
        "examples_per_sec_ci_high": 6200.0,
    }
    for i, row in enumerate((one, two)):
        files.write_row(i, unflatten(CellRow, row))
    if collectives:
        write_collectives(files, BASE["run_id"])
    return out


def write_collectives(files: RunFiles, run_id: str, machine: str | None = None) -> None:
    """Run ``run_id``'s mirrored [auto] all-reduce times at 2 replicas: three sizes and the cnn's
    gradients."""
    common = {
        "run_id": run_id,
        "timestamp": BASE["timestamp"],
        "machine": machine,
        "strategy": "mirrored",
        "op": "auto",
        "replicas": 2,
        "workers": 1,
        "devices": 2,
        "status": "ok",
    }
    sizes = [
        ("bytes", 4096, 1.0e-4),
        ("bytes", 65536, 1.3e-4),
        ("bytes", 2**20, 6.0e-4),
        ("cnn", 4 * 34_826, 1.0e-3),
    ]
    for i, (payload, nbytes, seconds) in enumerate(sizes):
        files.write_collective(i, {**common, "payload": payload, "bytes": nbytes, "time_s": seconds})


@pytest.mark.process
def test_predict_prints_the_table_and_draws_the_figure(tmp_path: Path) -> None:
    out = _folder(tmp_path)
    proc = cli(
        "predict", "--results", str(out), "--model", "cnn", "--strategy", "mirrored", "--replicas", "1,2,4"
    )
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line[:1].isdigit()}
    # n = 2: step = 10 ms x 2 (two devices share the host's 2 cores) + 1 ms measured all-reduce
    assert lines["2"].split()[1:3] == [f"{128 / 0.021:,.0f}", f"{0.010 / 0.021:.2f}"]
    assert "measured (cnn gradients)" in lines["2"] and "6,000 [5,800..6,200]" in lines["2"]
    assert f"{(128 / 0.021 - 6000) / 6000:+.0%}" in lines["2"]
    assert "alpha-beta fit of mirrored[auto]" in lines["4"]  # no gradient measurement at 4
    assert "1  " in proc.stdout and "all-reduce cost: alpha-beta fit" in proc.stdout
    assert (out / "figures" / "predict_cnn_mirrored.png").is_file()
    assert (out / "figures" / "predict_cnn_mirrored.svg").is_file()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "dense", "--strategy", "mirrored"], "no measured 1-device cell of dense mirrored"),
        (["--model", "cnn", "--strategy", "multi_worker_mirrored"], "no measured 1-device cell"),
        (
            ["--model", "cnn", "--strategy", "mirrored", "--op", "hierarchical_copy"],
            "no all-reduce times of mirrored [hierarchical_copy]",
        ),
        (
            ["--model", "cnn", "--strategy", "mirrored", "--workers", "2"],
            "--workers with --strategy mirrored",
        ),
        (["--model", "cnn", "--strategy", "mirrored", "--replicas", "0,2"], "--replicas='0,2'"),
    ],
)
@pytest.mark.process
def test_bad_input_names_the_problem(tmp_path: Path, args: list[str], message: str) -> None:
    proc = cli("predict", "--results", str(_folder(tmp_path)), *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def _mwms_folder(tmp_path: Path) -> Path:
    """multi_worker_mirrored [ring] on 1 and 2 local workers of a 2-core host, a 2-replica cell that
    must not pass for 1 worker, and ring all-reduce times on 2 and 3 workers."""
    out = tmp_path / "mwms"
    files = RunFiles(out, "2026-01-01", BASE["run_id"])
    mwms = {
        **BASE,
        "strategy": "multi_worker_mirrored",
        "cross_device_ops": "none",
        "communication": "ring",
        "device_name": "Xeon",
    }
    rows = [
        {
            **mwms,
            "cell_id": "w1",
            "replicas": 1,
            "workers": 1,
            "effective_batch": 64,
            "examples_per_sec": 3200.0,
            "examples_per_sec_ci_low": 3100.0,
            "examples_per_sec_ci_high": 3300.0,
        },  # step 20 ms
        {
            **mwms,
            "cell_id": "w2",
            "replicas": 1,
            "workers": 2,
            "cores_per_worker": 1,
            "effective_batch": 128,
            "examples_per_sec": 2900.0,
        },
        {
            **mwms,
            "cell_id": "r2w1",
            "replicas": 2,
            "workers": 1,
            "effective_batch": 128,
            "examples_per_sec": 1.0,
        },
    ]
    for i, row in enumerate(rows):
        files.write_row(i, unflatten(CellRow, row))
    common = {
        "run_id": BASE["run_id"],
        "timestamp": BASE["timestamp"],
        "status": "ok",
        "strategy": "multi_worker_mirrored",
        "op": "ring",
        "replicas": 1,
        "payload": "bytes",
        "device_kind": "CPU",
        "device_name": "Xeon",
        "host_cores": 2,
    }
    # planted alpha 100 us, beta 1 ns/B: T(n, m) = 2(n-1) 1e-4 + 2(n-1)/n m 1e-9
    for i, (n, m) in enumerate((n, m) for n in (2, 3) for m in (4096, 2**20)):
        seconds = 2 * (n - 1) * 1e-4 + 2 * (n - 1) / n * m * 1e-9
        files.write_collective(i, {**common, "workers": n, "devices": n, "bytes": m, "time_s": seconds})
    return out


@pytest.mark.process
def test_predict_multi_worker_mirrored_from_the_fit_up_to_64_workers(tmp_path: Path) -> None:
    out = _mwms_folder(tmp_path)
    figures = tmp_path / "figs"
    proc = cli(
        "predict",
        "--results",
        str(out),
        "--model",
        "cnn",
        "--strategy",
        "multi_worker_mirrored",
        "--workers",
        "1,2,4,8,64",
        "--figures",
        str(figures),
    )
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line.split() for line in proc.stdout.splitlines() if line[:1].isdigit()}
    assert list(lines) == ["1", "2", "4", "8", "64"]
    # 64 workers on 2 cores: step = 20 ms x 64 (each worker gets 1/32 of the cores it had alone)
    # + T(64, 4 x 34,826 B) from the planted fit
    t64 = 2 * 63 * 1e-4 + 2 * 63 / 64 * 4 * 34_826 * 1e-9
    step = 0.020 * 64 + t64
    assert lines["64"][1] == f"{64 * 64 / step:,.0f}" and f"{0.020 / step:.2f}" in lines["64"]
    assert lines["64"][-1] == "-"  # nothing measured at 64
    # 1 worker: the measured figure is the 1-worker cell's (not the 2-replica one's), error 0
    assert lines["1"][-4:-1] == ["3,200", "[3,100..3,300]", "+0%"]
    t2 = 2 * 1e-4 + 4 * 34_826 * 1e-9
    assert lines["2"][-3:-1] == ["2,900", f"{(128 / (0.040 + t2) - 2900) / 2900:+.0%}"]
    assert "alpha 100.0 us per ring step, 8 Gb/s per link, fit error 0% RMS" in proc.stdout
    assert (figures / "predict_cnn_multi_worker_mirrored.svg").is_file()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch", "0"], "Received --batch=0; expected an integer >= 1"),
        (["--accum-steps", "0"], "Received --accum-steps=0"),
    ],
)
def test_bad_numbers_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    from harness.commands import main

    code = main(
        ["predict", "--results", str(_folder(tmp_path)), "--model", "cnn", "--strategy", "mirrored", *args]
    )
    assert code == 2 and message in capsys.readouterr().err


def test_too_few_all_reduce_times_and_no_results_name_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.commands import main

    out = _folder(tmp_path)
    for path in sorted((out / "collectives").rglob("*.parquet"))[1:]:
        path.unlink()  # one time on 2 devices left
    assert main(["predict", "--results", str(out), "--model", "cnn", "--strategy", "mirrored"]) == 2
    err = capsys.readouterr().err
    assert "1 all-reduce time(s) of mirrored [auto]" in err and "run --sweep collectives" in err
    assert (
        main(["predict", "--results", str(tmp_path / "empty"), "--model", "cnn", "--strategy", "mirrored"])
        == 2
    )
    assert "no results under" in capsys.readouterr().err


def test_the_descriptors_say_which_axis_grows_and_which_op_is_priced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.analysis.scale import scaling
    from harness.commands import main
    from harness.spec.strategies import ALLREDUCE_STRATEGIES, STRATEGIES

    assert scaling.device_axes("mirrored") == ("replicas", "workers")
    assert scaling.device_axes("multi_worker_mirrored") == ("workers", "replicas")
    assert [str(STRATEGIES[s].predict_option) for s in ALLREDUCE_STRATEGIES] == ["auto", "ring"]
    code = main(
        [
            "predict",
            "--results",
            str(tmp_path),
            "--model",
            "cnn",
            "--strategy",
            "multi_worker_mirrored",
            "--replicas",
            "2",
        ]
    )
    assert (
        code == 2
        and ("Received --replicas with --strategy multi_worker_mirrored; expected --workers")
        in capsys.readouterr().err
    )


def test_predict_scales_the_baseline_of_its_own_key_measured_on_one_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Newer 1-device rows that differ only in XLA or the optimizer, or that ran on two nodes, are
    not predict's baseline: the 10 ms cell of the default axes is."""
    from harness.commands import main

    out = _folder(tmp_path)
    files = RunFiles(out, "2026-01-02", "20260102T000000Z-bbbbbb")
    one = {
        **BASE,
        "run_id": "20260102T000000Z-bbbbbb",
        "timestamp": "2026-01-02T00:00:00",
        "replicas": 1,
        "cross_device_ops": "none",
        "effective_batch": 64,
    }
    for i, extra in enumerate(
        (
            {"cell_id": "xla", "xla": "on", "examples_per_sec": 64000.0},
            {"cell_id": "adam", "optimizer": "adam", "examples_per_sec": 32000.0},
            {"cell_id": "two-nodes", "nodes": 2, "link_gbps": 9.4, "examples_per_sec": 16000.0},
        )
    ):
        files.write_row(i, unflatten(CellRow, {**one, **extra}))
    argv = ["predict", "--results", str(out), "--model", "cnn", "--strategy", "mirrored", "--replicas", "1,2"]
    assert main([*argv, "--figures", str(tmp_path / "figs")]) == 0
    lines = {
        line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()
    }
    assert lines["1"][1] == "6,400" and lines["2"][1] == f"{128 / 0.021:,.0f}"
    assert lines["1"][-3:] == ["6,400", "+0%", "-"]  # measured on one node (no CI: no interval), as the fit
