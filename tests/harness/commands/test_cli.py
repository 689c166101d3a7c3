"""Tests of ``python -m harness``, checking that TensorFlow is never imported by the parent process:
command lines as ``main(argv)`` in the session's fresh command-line interpreter (:mod:`tests.cli`);
the entry point and a closed pipe each in an interpreter of their own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.spec.axes import AXES, CROSS_DEVICE_OPS_NAMES
from harness.spec.sweeps import SWEEPS
from tests.cli import cli

REPO = Path(__file__).resolve().parents[3]


def harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI's main() in the session's command-line interpreter; it fails the test with
    :class:`tests.cli.TensorFlowImported` if the command imported TensorFlow."""
    return cli(*args, env={"COLUMNS": "100", **(env or {})})


@pytest.mark.parametrize(
    "flag,bad,accepted",
    [
        ("--model", "resnet", "cnn"),
        ("--data", "imagenet", "synthetic"),
        ("--strategy", "mirored", "mirrored"),
        ("--cross-device-ops", "ring", "hierarchical_copy"),
        ("--replicas", "0", "at least 1"),
        ("--workers", "0", "at least 1"),
        ("--communication", "grpc", "ring"),
        ("--batch", "0", "at least 1"),
        ("--accum-steps", "0", "at least 1"),
        ("--loop", "keras", "ctl"),
        ("--steps-per-execution", "0", "at least 1"),
        ("--precision", "fp8", "mixed_bfloat16"),
        ("--scaling", "linear", "strong"),
        ("--sweep", "nope", "smoke"),
        ("--repeats", "1", "at least 2"),
        ("--window-s", "0", "more than 0"),
        ("--cpu-devices", "0", "from 1 to 256"),
    ],
)
@pytest.mark.process
def test_run_rejects_bad_value(flag, bad, accepted, tmp_path):
    proc = harness("run", flag, bad, "--results", str(tmp_path / "results"))
    assert proc.returncode == 2, proc.stderr
    assert "tensorflow imported" not in proc.stderr
    assert f"{flag}={bad!r}" in proc.stderr or f"{flag}={bad}" in proc.stderr, proc.stderr
    assert accepted in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: ")
    assert not (tmp_path / "results").exists()  # nothing measured, nothing written


@pytest.mark.process
def test_bad_item_in_a_comma_list(tmp_path):
    proc = harness("list", "--strategy", "default,mirored", "--device", "cpu")
    assert proc.returncode == 2
    assert "'mirored'" in proc.stderr and "central_storage" in proc.stderr


@pytest.mark.process
def test_list_smoke_marks_nccl_unsupported():
    proc = harness("list", "--sweep", "smoke", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "tensorflow imported" not in proc.stderr
    from harness.spec.protocol import Platform
    from harness.spec.rules import unsupported_reason
    from harness.spec.sweep import expand

    platform = Platform("cpu", 0, 2)
    cells = expand(SWEEPS["smoke"], platform)
    lines = proc.stdout.splitlines()
    cell_lines = lines[: len(cells)]
    assert [line.split()[0] for line in cell_lines] == [c.id for c in cells]
    n_unsupported = 0
    for cell, line in zip(cells, cell_lines, strict=True):
        reason = unsupported_reason(cell, platform)
        if cell.cross_device_ops == "nccl":
            n_unsupported += 1
            assert reason is not None and line.endswith("unsupported: " + reason)
            assert "NcclAllReduce" in line
        else:
            assert line.split()[1:] == ["run"]
    assert n_unsupported > 0
    assert (
        f"{len(cells)} cells in sweep 'smoke': {len(cells) - n_unsupported} to run, "
        f"{n_unsupported} unsupported"
    ) in proc.stdout


@pytest.mark.process
def test_list_axis_flags_make_a_custom_sweep():
    proc = harness(
        "list",
        "--model",
        "dense",
        "--strategy",
        "default,mirrored",
        "--replicas",
        "1..max",
        "--device",
        "cpu",
        "--cpu-devices",
        "3",
        "--cross-device-ops",
        "hierarchical_copy",
        "--blocks",
        "5",
    )
    assert proc.returncode == 0, proc.stderr
    ids = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("dense/")]
    assert ids == [
        "dense/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "dense/mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "dense/mirrored[hierarchical_copy]/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "dense/mirrored[hierarchical_copy]/r3w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
    ]
    r3 = next(line for line in proc.stdout.splitlines() if "/r3w1/" in line)
    assert "unsupported:" in r3 and "wrong sums" in r3
    assert "sweep 'custom'" in proc.stdout
    assert re.search(r"^blocks per instance.*\s5\s+--blocks$", proc.stdout, re.M), proc.stdout


@pytest.mark.process
def test_data_mnist_missing_file(tmp_path):
    missing = tmp_path / "nowhere" / "mnist.npz"
    proc = harness(
        "run",
        "--data",
        "mnist",
        "--mnist-path",
        str(missing),
        "--results",
        str(tmp_path / "r"),
        env={"KERAS_HOME": str(tmp_path / "keras")},
    )
    assert proc.returncode == 2
    assert "tensorflow imported" not in proc.stderr
    err = " ".join(proc.stderr.split())
    assert str(missing) in err
    assert "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz" in err
    assert str(tmp_path / "keras" / "datasets" / "mnist.npz") in err
    assert "--mnist-path" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.process
def test_data_mnist_default_path_missing(tmp_path):
    proc = harness("list", "--data", "synthetic,mnist", "--device", "cpu", env={"KERAS_HOME": str(tmp_path)})
    assert proc.returncode == 2
    assert str(tmp_path / "datasets" / "mnist.npz") in proc.stderr


@pytest.mark.process
def test_run_help_lists_axes_and_choices():
    proc = harness("run", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for axis in AXES:
        assert axis.flag in text
        if axis.choices:
            for choice in axis.choices:
                assert re.search(rf"\b{re.escape(choice)}\b", text), (axis.flag, choice)
        else:
            assert f"at least {axis.minimum}" in text
    for name in SWEEPS:
        assert name in text
    for flag in ("--repeats", "--window-s", "--mnist-path", "--results", "--device", "--cpu-devices"):
        assert flag in text
    assert "1..max" in text
    assert all(op in text for op in CROSS_DEVICE_OPS_NAMES)


@pytest.mark.process
def test_python_m_harness_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "list", "--sweep", "smoke", "--device", "cpu"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "cnn/default/r1w1/b32/acc1/ctl/spe5/float32/synthetic/weak" in proc.stdout


@pytest.mark.process
def test_a_reader_that_leaves_ends_the_command_quietly():
    """`python -m harness list | head -1`: the closed pipe ends the command as SIGPIPE would,
    without a BrokenPipeError traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "list", "--device", "cpu"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # before the command writes its first line
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err


@pytest.mark.process
def test_no_command_is_a_usage_error():
    proc = harness()
    assert proc.returncode == 2
    assert "run" in proc.stderr and "list" in proc.stderr


VERIFY_AXES = (
    "--model",
    "dense",
    "--strategy",
    "default,one_device,mirrored",
    "--replicas",
    "1,2",
    "--accum-steps",
    "1,2",
)
"""Valid axis values and nothing else: a custom selection at the default steps_per_execution, 10."""


def _verify_updates_taken(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """Run ``main(["verify", "--device", "cpu", *args])`` in process with training stubbed out;
    return the updates verify would train each cell for."""
    from harness.commands import main, verify

    taken: list[int] = []
    monkeypatch.setattr(verify, "interrupt_on_sigterm", lambda: None)
    monkeypatch.setattr(verify, "verify", lambda sel, updates, include: taken.append(updates) or 0)
    rc = main(["verify", "--device", "cpu", *args])
    assert rc == 0 and taken, f"verify {' '.join(args)} exited {rc} before training"
    return taken[0]


@pytest.mark.parametrize("args", [VERIFY_AXES, *(("--sweep", s) for s in SWEEPS)], ids=lambda a: " ".join(a))
def test_verify_defaults_never_contradict_the_selection(monkeypatch, capsys, args):
    """verify with its default --updates accepts every selection made of defaults and valid axis
    values: the default is the smallest multiple of every steps_per_execution that is at least 8."""
    from harness.spec.protocol import Platform
    from harness.spec.sweep import expand
    from harness.spec.sweeps import get_sweep

    updates = _verify_updates_taken(monkeypatch, *args)
    spes = (
        {c.steps_per_execution for c in expand(get_sweep(args[1]), Platform())}
        if args[0] == "--sweep"
        else {10}
    )
    assert updates >= 8 and all(updates % s == 0 for s in spes), (updates, spes)
    assert "error" not in capsys.readouterr().err


def test_verify_default_updates_of_a_custom_selection(monkeypatch):
    assert _verify_updates_taken(monkeypatch, *VERIFY_AXES) == 10
    assert _verify_updates_taken(monkeypatch, *VERIFY_AXES, "--steps-per-execution", "3,4") == 12
    assert _verify_updates_taken(monkeypatch) == 8  # the equivalence sweep: steps_per_execution 1
    assert _verify_updates_taken(monkeypatch, *VERIFY_AXES, "--updates", "30") == 30


@pytest.mark.process
def test_verify_explicit_updates_that_contradict_is_an_error():
    proc = harness("verify", "--device", "cpu", *VERIFY_AXES, "--updates", "8")
    assert proc.returncode == 2, proc.stderr
    assert "tensorflow imported" not in proc.stderr
    assert proc.stderr.startswith("error: Received --updates=8;"), proc.stderr
    assert "multiple of 10" in proc.stderr and "[10]" in proc.stderr, proc.stderr


@pytest.mark.process
def test_version_names_the_suite_its_commit_and_the_tensorflow_and_keras_installed():
    from importlib.metadata import version

    proc = harness("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tf-strategy-bench 0.1.0 (commit ")
    assert f"Keras {version('keras')}" in proc.stdout and "TensorFlow " in proc.stdout


def test_the_console_script_is_the_module_s_entry_point():
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"tf-strategy-bench": "harness.commands:console"}
