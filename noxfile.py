"""Sessions: ``bench`` (run the default sweep, or ``-- ARGS`` for ``python -m harness run ARGS``,
then the report), ``report``, ``tests``, ``unit`` (the fast tier, without TensorFlow),
``benchmarks``, ``ab`` (two TensorFlow builds, paired), ``lint`` (ruff and mypy) and ``docs`` (the
CLI reference checked against the parsers, then the site built with ``mkdocs build --strict``).
Each but ``unit``, ``lint`` and ``docs`` installs the TensorFlow build that fits the machine: the
CUDA build where ``nvidia-smi`` lists a GPU, tensorflow-cpu elsewhere; ``HARNESS_TF=cpu|cuda``
overrides."""

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
    session.run("python", "-m", "harness", "report", "--results", out, "--report-dir", f"{out}/report")


def _results_dir(args: list[str]) -> str:
    """The --results of ``python -m harness run`` ARGS (default: results)."""
    for i, arg in enumerate(args):
        if arg == "--results" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--results="):
            return arg.split("=", 1)[1]
    return "results"


@nox.session
def report(session: nox.Session) -> None:
    """Figures and an HTML report of the latest run: ``-- ARGS`` go to ``python -m harness report``."""
    _install(session)
    session.run("python", "-m", "harness", "report", *session.posargs)


UNIT = "not slow and not tf and not process"
"""The unit tier: what needs neither TensorFlow nor a process (markers checked by tests/conftest.py)."""
ONE_AT_A_TIME = "not slow and (tf or process)"
"""The rest of the default tier: tests that train or start processes, many of them timed."""


@nox.session
def tests(session: nox.Session) -> None:
    """The default tier (``-m "not slow"``): the unit tier on every core, then the tests that train or
    start processes one at a time (they time things: a test beside them would slow them). With
    JAX's CPU build for the co-tenant tests (``--tenant-framework jax``); PyTorch's tests skip where
    it is missing. ``-- ARGS`` go to one pytest run instead, e.g. ``-- -m slow``."""
    _install(session, "test", "jax")
    if session.posargs:
        session.run("python", "-m", "pytest", *session.posargs)
        return
    session.run("python", "-m", "pytest", "-m", UNIT, "-n", "auto")
    session.run("python", "-m", "pytest", "-m", ONE_AT_A_TIME)
NO_TF = "import importlib.util as u, sys; sys.exit(u.find_spec('tensorflow') and 'TensorFlow is installed')"
"""Fails the unit session where a dependency has pulled TensorFlow in."""


@nox.session
def unit(session: nox.Session) -> None:
    """The fast tier: ``-m "not slow and not tf and not process"`` in an environment without
    TensorFlow, spread over the machine's cores by pytest-xdist (its tests share no state and time
    nothing); ``-- ARGS`` are added to pytest's, e.g. ``-- -x``, a test path or ``-- -n 0``."""
    session.install("-e", ".[test]")
    session.run("python", "-c", NO_TF, silent=True)
    session.run("python", "-m", "pytest", "-m", UNIT, "-n", "auto", *session.posargs)


@nox.session
def benchmarks(session: nox.Session) -> None:
    """pytest-benchmark tests in benchmarks/ (``-- ARGS`` go to pytest)."""
    _install(session, "test")
    session.run("python", "-m", "pytest", "benchmarks", *session.posargs)


VERSIONS = ("import tensorflow as tf, keras; b = tf.sysconfig.get_build_info(); "
            "print(f'TensorFlow {tf.__version__}, Keras {keras.__version__}, '"
            "f\"CUDA {b.get('cuda_version') or 'none'}, cuDNN {b.get('cudnn_version') or 'none'}\")")
"""Prints what a side's environment resolved to."""


SIDES = {"--baseline": "A", "--candidate": "B"}
"""``nox -s ab``'s side flags, as ``python -m harness ab`` names them, and the side each is."""


def _ab_specs(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """(--baseline / --candidate requirement specs, by side A / B; the other arguments for
    ``python -m harness ab``)."""
    specs: dict[str, str] = {}
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        name, sep, value = arg.partition("=")
        if name in SIDES:
            specs[SIDES[name]] = value if sep else next(it, "")
        else:
            rest.append(arg)
    return specs, rest


def _cuda_spec(spec: str) -> str:
    """On a GPU machine, a tensorflow-cpu spec becomes the CUDA build of the same versions."""
    if spec.startswith("tensorflow-cpu") and _has_nvidia_gpu() and os.environ.get("HARNESS_TF") != "cpu":
        return "tensorflow[and-cuda]" + spec[len("tensorflow-cpu"):]
    return spec


@nox.session
def ab(session: nox.Session) -> None:
    """Two TensorFlow builds, paired: ``nox -s ab -- --baseline "tensorflow-cpu==2.20.*" --candidate
    "tensorflow-cpu==2.21.*" [ARGS]`` makes (or reuses) one environment per side with this project
    installed against that requirement, prints what each resolved to, and runs ``python -m harness
    ab --baseline <side A python> --candidate <side B python> ARGS``."""
    specs, rest = _ab_specs(list(session.posargs))
    if set(specs) != {"A", "B"} or not all(specs.values()):
        session.error('expected --baseline SPEC and --candidate SPEC, e.g. -- --baseline '
                      '"tensorflow-cpu==2.20.*" --candidate "tensorflow-cpu==2.21.*" --model cnn '
                      '--strategy default --batch 64')
    _install(session)
    pythons = {}
    for side, spec in sorted(specs.items()):
        spec = _cuda_spec(spec)
        folder = os.path.join(".nox", "ab-" + "".join(c if c.isalnum() else "_" for c in spec))
        python = os.path.join(folder, "bin", "python")
        if not os.path.exists(python):
            session.run("python", "-m", "venv", folder)
        session.run(python, "-m", "pip", "install", "-q", "-e", ".", spec, external=True)
        resolved = session.run(python, "-c", VERSIONS, external=True, silent=True,
                               env={"TF_CPP_MIN_LOG_LEVEL": "3"})
        session.log(f"side {side}: {spec} -> {str(resolved).strip().splitlines()[-1]}")
        pythons[side] = python
    # nox fails the session on ab's exit 1 (regression) and 3 (undecided) alike; call
    # ``python -m harness ab`` directly to tell them apart
    session.run("python", "-m", "harness", "ab", "--baseline", pythons["A"], "--candidate", pythons["B"], *rest)


LINTED = ("harness", "tests", "benchmarks", "tools")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) over harness, tests and benchmarks, and mypy over harness, strict
    on spec, contract, formulas, analysis and results (settings: ``pyproject.toml``). Installs no TensorFlow:
    the worker imports it lazily and mypy treats it as untyped."""
    session.install("-e", ".[lint]")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, without TensorFlow: fails when docs/reference/cli.md differs from
    what the parsers generate (``python -m tools.reference docs/reference/cli.md``
    rewrites it), then builds docs/ into site/ with ``mkdocs build --strict`` (mkdocs.yml), which
    fails on a broken link or anchor, a page missing from the nav or a missing snippet."""
    session.install("-e", ".[docs]")
    session.run("python", "-m", "tools.reference", "--check", "docs/reference/cli.md")
    session.run("python", "-m", "tools.reference", "--check", "docs/explanation/glossary.md")
    session.run("python", "-m", "tools.reference", "--check", "results/README.md")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")
