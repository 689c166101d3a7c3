"""Sessions: ``bench`` (run the default sweep, or ``-- ARGS`` for ``python -m harness run ARGS``,
then the report), ``report``, ``tests`` and ``benchmarks``. Each installs the TensorFlow build that
fits the machine: the CUDA build where ``nvidia-smi`` lists a GPU, tensorflow-cpu elsewhere;
``HARNESS_TF=cpu|cuda`` overrides."""

from __future__ import annotations

import os
import shutil
import subprocess

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
TF_BUILDS = ("auto", "cpu", "cuda")


def _has_nvidia_gpu() -> bool:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return False
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "GPU " in out


def _install(session: nox.Session, *extras: str) -> None:
    choice = os.environ.get("HARNESS_TF", "auto")
    if choice not in TF_BUILDS:
        session.error(f"HARNESS_TF={choice!r}; expected one of: {', '.join(TF_BUILDS)}")
    build = choice if choice != "auto" else ("cuda" if _has_nvidia_gpu() else "cpu")
    why = "set by HARNESS_TF" if choice != "auto" else (
        "nvidia-smi lists a GPU" if build == "cuda" else "no NVIDIA GPU visible")
    session.log(f"TensorFlow build: {build} ({why}); override with HARNESS_TF=cpu|cuda")
    session.install("-e", f".[{','.join((build, *extras))}]")


@nox.session
def bench(session: nox.Session) -> None:
    """Measure a sweep: ``nox -s bench`` runs the default sweep; ``nox -s bench -- ARGS`` passes ARGS
    to ``python -m harness run``."""
    _install(session)
    session.run("python", "-m", "harness", "run", *(session.posargs or ["--sweep", "default"]))
    out = _results_dir(session.posargs)
    session.run("python", "-m", "harness", "report", "--results", out, "--out", f"{out}/report")


def _results_dir(args: list[str]) -> str:
    """The --out of ``python -m harness run`` ARGS (default: results)."""
    for i, arg in enumerate(args):
        if arg == "--out" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--out="):
            return arg.split("=", 1)[1]
    return "results"


@nox.session
def report(session: nox.Session) -> None:
    """Figures and an HTML report of the latest run: ``-- ARGS`` go to ``python -m harness report``."""
    _install(session)
    session.run("python", "-m", "harness", "report", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (``-- ARGS`` go to pytest, e.g. ``-- -m slow``)."""
    _install(session, "test")
    session.run("python", "-m", "pytest", *(session.posargs or ["-m", "not slow"]))


@nox.session
def benchmarks(session: nox.Session) -> None:
    """pytest-benchmark tests in benchmarks/ (``-- ARGS`` go to pytest)."""
    _install(session, "test")
    session.run("python", "-m", "pytest", "benchmarks", *session.posargs)
