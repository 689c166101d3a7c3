"""The guards of tests/conftest.py that keep the unit tier free of TensorFlow and processes."""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import subprocess
import sys

import pytest

from tests.conftest import GUARD, UnmarkedProcess, UnmarkedTensorFlow


def test_an_unmarked_tensorflow_import_is_an_error_not_a_skip() -> None:
    # a submodule never imported: the finder is asked even after a tf test imported TensorFlow
    with GUARD.watching("this block", tf=True, process=False) as seen:
        with pytest.raises(UnmarkedTensorFlow, match="this block imports tensorflow"):
            pytest.importorskip("tensorflow.no_such_module")
        with pytest.raises(UnmarkedTensorFlow, match=r"mark it @pytest\.mark\.tf"):
            importlib.import_module("keras.no_such_module")
        with contextlib.suppress(UnmarkedTensorFlow):  # caught, still recorded: the test fails
            importlib.import_module("tf_keras")
    assert len(seen) == 3


def test_the_finder_stands_aside_where_tensorflow_is_allowed() -> None:
    with GUARD.watching("this block", tf=False, process=True) as seen:
        assert GUARD.find_spec("tensorflow") is None  # the next finder on sys.meta_path decides
        assert GUARD.find_spec("tensorflow_datasets") is None  # not TensorFlow itself
    with GUARD.watching("this block", tf=True, process=True), pytest.raises(UnmarkedTensorFlow):
        GUARD.find_spec("tensorflow.python.distribute")
    assert seen == []


@pytest.mark.parametrize(
    "start",
    [
        lambda: subprocess.run(["true"], check=False),
        lambda: subprocess.Popen([sys.executable, "-c", "pass"]),
        lambda: os.system("true"),
        lambda: os.fork(),
        lambda: multiprocessing.get_context("spawn").Process(target=print).start(),
    ],
    ids=["subprocess.run", "Popen", "os.system", "os.fork", "multiprocessing"],
)
def test_an_unmarked_process_start_is_an_error(start) -> None:  # type: ignore[no-untyped-def]
    expected = "this block starts a process.*mark it @pytest.mark.process"
    with (
        GUARD.watching("this block", tf=False, process=True) as seen,
        pytest.raises(UnmarkedProcess, match=expected),
    ):
        start()
    assert len(seen) == 1


def test_the_guards_are_on_during_an_unmarked_test() -> None:
    assert GUARD.tf_where is not None and GUARD.process_where is not None
    assert "test_the_guards_are_on_during_an_unmarked_test (call)" in GUARD.process_where


def test_a_command_line_in_an_unmarked_test_is_an_error() -> None:
    from tests.cli import cli

    expected = "this block runs a command line in the session's interpreter: mark it @pytest.mark.process"
    with (
        GUARD.watching("this block", tf=False, process=True) as seen,
        pytest.raises(UnmarkedProcess, match=expected),
    ):
        cli("list")
    assert len(seen) == 1


def test_a_command_line_ends_as_its_own_interpreter_would(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """tests.cli's side of a command line: the exit code of a return, sys.exit or an uncaught
    exception, stdout and stderr apart, the environment and working directory the call was given,
    and the test process's own restored after it."""
    from tests.cli import _run

    def main(argv: list[str]) -> int:
        print(f"out {os.environ['ONLY_HERE']} {os.getcwd()} é")
        print("err", file=sys.stderr)
        os.environ["LEFT_BEHIND"] = "1"
        os.chdir("/")
        if argv == ["exit"]:
            sys.exit(3)
        if argv == ["message"]:
            sys.exit("a message")
        if argv == ["raise"]:
            raise ValueError("boom")
        return 0

    cwd, env = os.getcwd(), {**os.environ, "ONLY_HERE": "yes"}
    replies = {a: _run(main, [a], env, str(tmp_path)) for a in ("return", "exit", "message", "raise")}
    assert {a: r["returncode"] for a, r in replies.items()} == {
        "return": 0,
        "exit": 3,
        "message": 1,
        "raise": 1,
    }
    assert all(r["stdout"] == f"out yes {tmp_path} é\n" for r in replies.values())
    assert replies["return"]["stderr"] == "err\n" and replies["message"]["stderr"] == "err\na message\n"
    assert "Traceback" in replies["raise"]["stderr"] and "ValueError: boom" in replies["raise"]["stderr"]
    assert os.getcwd() == cwd and "ONLY_HERE" not in os.environ and "LEFT_BEHIND" not in os.environ
