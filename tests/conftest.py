"""The two test tiers, and the guards that keep a test's markers true.

Markers (registered in pyproject.toml):

* ``tf``: the test imports TensorFlow or Keras in the test process, itself or through the code it
  calls (every ``harness.worker`` module imports TensorFlow lazily, inside its functions);
* ``process``: the test starts a process: the CLI (``python -m harness``), worker processes,
  import-linter, ``python -c``, multiprocessing; whatever the child runs;
* ``slow``: minutes.

``nox -s tests`` runs ``-m "not slow"``; ``nox -s unit`` runs ``-m "not slow and not tf and not
process"`` in an environment without TensorFlow.

A missing marker would put a test in the unit tier without anyone noticing: a test that imports
TensorFlow under ``pytest.importorskip`` would be skipped there, not run. So the markers are checked
rather than trusted, by two guards at the boundaries themselves:

1. **Importing a test module never imports TensorFlow or Keras**, in every session: a test module
   that does fails collection. Tests that need TensorFlow import it inside the test (or a fixture).
   This is what lets the unit session collect every module on a machine without TensorFlow, with
   the same test ids as the full session, so there is no ``collect_ignore`` list to drift out of
   date, and no ``importorskip`` that would turn a broken TensorFlow install in the full session
   into skips.
2. **A test without ``tf`` that imports** ``tensorflow``, ``tf_keras`` or ``keras`` (in setup,
   call or teardown) gets :class:`UnmarkedTensorFlow`. It is not an ImportError, so neither
   ``importorskip`` nor ``except ImportError`` turns it into a skip or a fallback, and the test
   fails at the end of the phase even when the error was caught. Python imports a module once: after
   a ``tf`` test has imported TensorFlow, a later unmarked test that uses it goes unseen. The unit
   session runs no ``tf`` test, so there every such test is seen; the full session sees those that
   run before its first ``tf`` test.
3. **A test without ``process`` that starts a process** (``subprocess``, ``multiprocessing``,
   ``os.fork``/``forkpty``/``posix_spawn``/``system``: the calls every one of those ends in) gets
   :class:`UnmarkedProcess` and fails the same way, in every session. Only what libraries start on
   their own is let through (:data:`ALLOWED_PROGRAMS`): matplotlib's ``fc-list`` (once per machine,
   to build its font cache) and ``uname -p`` (``platform.processor()``, run by TensorFlow's import).

The guards patch the interpreter for the whole process (other threads included), and are on only
while a test module is imported and during each test's setup, call and teardown.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
TF_MODULES = ("tensorflow", "tf_keras", "keras")
ALLOWED_PROGRAMS = {"fc-list", "uname"}
"""Programs a test not marked ``process`` may still start, because a library does it on its own:
matplotlib's font-cache scan (once per machine) and ``platform.processor()`` (TensorFlow's import)."""


class UnmarkedTestError(Exception):
    """A test did something its markers do not allow (not an ImportError or OSError on purpose)."""


class UnmarkedTensorFlow(UnmarkedTestError):
    pass


class UnmarkedProcess(UnmarkedTestError):
    pass


class _Guard:
    """The import hook and the process-start patches; ``where`` is what is running, or None."""

    def __init__(self) -> None:
        self.tf_where: str | None = None
        self.process_where: str | None = None
        self.offenses: list[str] = []

    # -- TensorFlow: a meta-path finder ahead of every other ------------------------------------

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if self.tf_where is not None and name.split(".")[0] in TF_MODULES:
            raise self._offense(
                UnmarkedTensorFlow,
                f"{self.tf_where} imports {name}: mark it "
                "@pytest.mark.tf and import TensorFlow inside the test or a "
                "fixture, never at module level",
            )

    # -- processes: the calls every way of starting one ends in ---------------------------------

    def _patch(self, owner: Any, name: str, program: Callable[..., str | None]) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return

        def guarded(*args: Any, **kwargs: Any) -> Any:
            if self.process_where is not None:
                prog = program(*args)
                if prog is None or os.path.basename(prog) not in ALLOWED_PROGRAMS:
                    raise self._offense(
                        UnmarkedProcess,
                        f"{self.process_where} starts a process "
                        f"({name} {prog or ''}): mark it @pytest.mark.process",
                    )
            return original(*args, **kwargs)

        setattr(owner, name, guarded)

    def install(self) -> None:
        sys.meta_path.insert(0, self)  # type: ignore[arg-type]

        def argv0(args, *_):
            return _program(args)  # fork_exec(args, executables, ...)

        self._patch(subprocess, "_fork_exec", argv0)
        self._patch(_posixsubprocess, "fork_exec", argv0)  # multiprocessing's spawn, forkserver
        self._patch(os, "posix_spawn", lambda path, *_: os.fsdecode(path))
        self._patch(os, "posix_spawnp", lambda path, *_: os.fsdecode(path))
        self._patch(os, "system", lambda command, *_: str(command).split(" ")[0])
        self._patch(os, "fork", lambda *_: None)
        self._patch(os, "forkpty", lambda *_: None)

    def _offense(self, kind: type[UnmarkedTestError], message: str) -> UnmarkedTestError:
        self.offenses.append(message)
        return kind(message)

    @contextlib.contextmanager
    def watching(self, where: str, tf: bool, process: bool) -> Iterator[list[str]]:
        """Guards on for ``where`` (``tf``, ``process``: whether each is watched); yields the list
        of what it did that its markers do not allow, filled in as it happens. Nests: the state
        before is restored after, and an offense inside goes to the inner list only."""
        before = self.tf_where, self.process_where, self.offenses
        self.offenses = offenses = []
        self.tf_where, self.process_where = (where if tf else None), (where if process else None)
        try:
            yield offenses
        finally:
            self.tf_where, self.process_where, self.offenses = before


def _program(args: Any) -> str | None:
    try:
        return os.fsdecode(args[0])
    except (TypeError, IndexError):
        return None


GUARD = _Guard()
GUARD.install()


def _caught(offenses: list[str]) -> str:
    return "; ".join(dict.fromkeys(offenses)) + " (the error was caught, but it still happened)"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """Rule 1: a test module under tests/ is imported with both guards on."""
    if not (isinstance(collector, pytest.Module) and TESTS in collector.path.parents):
        return (yield)
    with GUARD.watching(f"importing {collector.path.relative_to(TESTS.parent)}", True, True) as seen:
        report = yield
    if seen and report.passed:
        report.outcome, report.longrepr = "failed", _caught(seen)
    return report


@contextlib.contextmanager
def _phase(item: pytest.Item, phase: str) -> Iterator[None]:
    """Rules 2 and 3 for one phase of a test: an offense the test caught fails it afterwards."""
    with GUARD.watching(
        f"{item.nodeid} ({phase})",
        item.get_closest_marker("tf") is None,
        item.get_closest_marker("process") is None,
    ) as seen:
        yield
    if seen:
        pytest.fail(_caught(seen), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    with _phase(item, "setup"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    with _phase(item, "call"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    with _phase(item, "teardown"):
        return (yield)


@pytest.fixture(autouse=True, scope="session")
def _own_machine_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The test session's own machine-wide measuring lock (:mod:`harness.launch.system.lock`): the runs the
    tests start take it from one another, not from a user's run on the same machine."""
    before = os.environ.get("HARNESS_LOCK")
    os.environ["HARNESS_LOCK"] = str(tmp_path_factory.mktemp("lock") / "harness.lock")
    yield
    if before is None:
        os.environ.pop("HARNESS_LOCK", None)
    else:
        os.environ["HARNESS_LOCK"] = before
