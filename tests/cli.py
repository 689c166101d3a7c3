"""``python -m harness ARGS`` for the tests that check what a command prints and exits with, without
an interpreter per command line (about 1.5 s of imports each on 2 cores).

:func:`cli` sends each command line to one fresh interpreter (``python -m tests.cli``), started by
the first test that needs it and kept for the session, which runs it as ``main(argv)``. What a fresh
interpreter per command line gives is kept:

- the environment and working directory are the test's, as ``subprocess.run`` would pass them
  (``os.environ`` at the call, updated with ``env``), restored after the call;
- stdout is strict UTF-8 and stderr escapes what it cannot encode, as on a terminal; the exit code
  is ``main``'s, ``sys.exit``'s or argparse's, and an uncaught exception prints its traceback and
  exits 1;
- the parent side never imports TensorFlow: a command line after which ``tensorflow`` is in
  ``sys.modules`` fails its test with :class:`TensorFlowImported`, and the interpreter is replaced.

A test that calls :func:`cli` is marked ``process`` (it may start the interpreter); an unmarked one
fails with :class:`tests.conftest.UnmarkedProcess`, as if it had started it. Command lines that start
measuring processes (``run``, ``verify``, ``ab`` and ``doctor`` past their checks) keep their own
interpreter: :func:`tests.harness.launch.cells.test_runner.harness`.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import select
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300.0
"""Most seconds one command line may take."""


class TensorFlowImported(AssertionError):
    """A command line made the parent side import TensorFlow."""


class _Server:
    """The interpreter the command lines run in, and its log (its stderr, and fd 1 below Python)."""

    def __init__(self) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="harness-cli-", suffix=".log")  # noqa: SIM115 -- lives with the server
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.cli"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            encoding="utf-8",
        )

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            how = f"took over {timeout:g} s" if not ready else f"exited {self.proc.returncode}"
            raise RuntimeError(f"the command-line interpreter {how} on {request['argv']}:\n{self.tail()}")
        return json.loads(line)

    def tail(self) -> str:
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


_server: _Server | None = None


def _close() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None


atexit.register(_close)


def interpreter_pid() -> int | None:
    """The process id of the session's command-line interpreter while it runs (a test counting
    its own child processes leaves it out)."""
    return _server.proc.pid if _server is not None and _server.proc.poll() is None else None


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | str = ROOT, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``python -m harness *args`` (its ``main``) in the session's command-line interpreter, with
    ``os.environ`` updated by ``env``, in ``cwd``: its exit code, stdout and stderr."""
    global _server
    from tests.conftest import GUARD, UnmarkedProcess

    if GUARD.process_where is not None:  # recorded: the test fails even if it catches this
        raise GUARD._offense(
            UnmarkedProcess,
            f"{GUARD.process_where} runs a command line in the session's interpreter: "
            "mark it @pytest.mark.process",
        )
    if _server is None or _server.proc.poll() is not None:
        _server = _Server()
    argv = list(args)
    reply = _server.call({"argv": argv, "env": {**os.environ, **(env or {})}, "cwd": str(cwd)}, timeout)
    if reply["tensorflow"]:
        _close()  # the next command line gets an interpreter without TensorFlow
        raise TensorFlowImported(
            f"python -m harness {' '.join(argv)} imported TensorFlow:\n{reply['stderr']}"
        )
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "harness", *argv], reply["returncode"], reply["stdout"], reply["stderr"]
    )


# ------------------------------------------------------------------------------------------------
# The interpreter's side: python -m tests.cli
# ------------------------------------------------------------------------------------------------


def _exit_code(code: object) -> int:
    """The exit code of ``SystemExit(code)``, as the interpreter gives it (a message: printed, 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run(main: Any, argv: list[str], env: dict[str, str], cwd: str) -> dict[str, Any]:
    before_env, before_cwd = dict(os.environ), os.getcwd()
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True)
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
                sys.stdout.flush()
            except SystemExit as e:
                code = _exit_code(e.code)
            except BaseException:  # noqa: BLE001 -- as the interpreter would: the traceback, exit 1
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(before_env)
        os.chdir(before_cwd)
    return {
        "returncode": code,
        "stdout": out_bytes.getvalue().decode("utf-8"),
        "stderr": err_bytes.getvalue().decode("utf-8", errors="backslashreplace"),
        "tensorflow": "tensorflow" in sys.modules,
    }


def _serve() -> None:
    """One request a line on stdin (argv, env, cwd), one reply a line on the original stdout."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what is written below Python goes to the log, never between the replies
    from harness.commands import main

    for line in sys.stdin:
        request = json.loads(line)
        replies.write(json.dumps(_run(main, request["argv"], request["env"], request["cwd"])) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve()
