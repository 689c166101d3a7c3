"""A side's Python environment for ``nightly``: an interpreter path as given, or a requirement spec
installed with this suite into a venv of its own. The reference is pinned (docs/how-to/nightly.md,
"Environments"; a pin: 12 hex digits of its freeze's sha256, in ``<results>/nightly/pins.json``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.launch.system.process import HARNESS_ROOT

VERSIONS = "import tensorflow as tf, keras; print(f'TensorFlow {tf.__version__}, Keras {keras.__version__}')"
"""Prints what an environment resolved to."""

PIP_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Env:
    """A side ready to run: its interpreter, what it resolved to, and its pin (the freeze's hash)."""

    given: str
    python: str
    versions: str
    pin: str
    freeze: str


def is_interpreter(value: str) -> bool:
    """True when ``value`` names an executable file (else it is a requirement spec)."""
    return os.path.isfile(value) and os.access(value, os.X_OK)


def check_side(flag: str, value: str) -> None:
    """HarnessError naming ``flag`` unless ``value`` is an executable or reads as a spec."""
    if not value.strip():
        raise HarnessError(f"Received {flag}=''; expected a requirement spec or a Python interpreter.")
    if not is_interpreter(value) and (os.sep in value or value.startswith(".") or value.endswith("python")):
        raise HarnessError(
            f"Received {flag}={value!r}: no executable there; expected the path of a Python interpreter "
            "with TensorFlow installed, or a requirement spec such as 'tensorflow-cpu==2.20.*'."
        )


def suite_root() -> Path:
    """The checkout this suite runs from (installed into each side's environment)."""
    root = HARNESS_ROOT
    if not (root / "pyproject.toml").is_file():
        raise HarnessError(
            f"nightly builds each side's environment from a checkout of this suite; {root} is not "
            "one. Run it from a clone (pip install -e .), or pass interpreters to --candidate and "
            "--baseline."
        )
    return root


def run_checked(cmd: list[str], what: str, timeout: float = PIP_TIMEOUT_S) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        raise HarnessError(f"{what}: {e}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        raise HarnessError(f"{what}: `{' '.join(cmd[1:4])} ...` exited {proc.returncode}:\n{tail}")
    return proc.stdout


def pip(python: str, what: str, *args: str, timeout: float = PIP_TIMEOUT_S) -> str:
    """``python -m pip ARGS``'s stdout (:func:`run_checked`)."""
    return run_checked([python, "-m", "pip", *args], what, timeout)


def freeze(python: str) -> str:
    """``pip freeze`` sorted, editable installs (the suite) left out."""
    out = pip(python, f"pip freeze in {python}", "freeze", "--exclude-editable", timeout=300)
    return "\n".join(sorted(line for line in out.splitlines() if line and not line.startswith("#"))) + "\n"


SUITE_AT = "import harness, pathlib; print(pathlib.Path(harness.__file__).resolve().parents[1])"


def suite_at(python: str) -> str:
    """Where the environment imports this suite from ("" when it cannot)."""
    try:
        proc = subprocess.run([python, "-c", SUITE_AT], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def pin_of(freeze_text: str) -> str:
    return hashlib.sha256(freeze_text.encode()).hexdigest()[:12]


def versions(python: str) -> str:
    """``TensorFlow X, Keras Y`` of the interpreter (HarnessError when TensorFlow is missing)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        proc = subprocess.run([python, "-c", VERSIONS], capture_output=True, text=True, timeout=300, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        raise HarnessError(f"cannot run {python}: {e}") from None
    if proc.returncode != 0:
        raise HarnessError(
            f"{python} cannot import TensorFlow and Keras: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    return proc.stdout.strip().splitlines()[-1]


def env_folder(envs: Path, role: str, spec: str) -> Path:
    """The venv of side ``role`` (candidate or reference) built from ``spec`` under ``envs``."""
    return envs / (role + "-" + "".join(c if c.isalnum() or c in ".-" else "_" for c in spec)[:80])


def make_venv(folder: Path, what: str) -> str:
    python = folder / "bin" / "python"
    if not python.exists():
        run_checked([sys.executable, "-m", "venv", str(folder)], f"{what}: creating the venv {folder}", 600)
    return str(python)


def _install(python: str, what: str, *args: str) -> None:
    pip(python, what, "install", "-q", "-e", str(suite_root()), *args)


def _env(given: str, python: str, text: str) -> Env:
    """The side ``given`` run by ``python``, whose freeze is ``text``."""
    return Env(given, python, versions(python), pin_of(text), text)


def candidate(spec: str, envs: Path) -> Env:
    """The candidate: an interpreter as given, or ``spec`` installed (upgraded) into its venv."""
    if is_interpreter(spec):
        return _env(spec, spec, freeze(spec))
    what = f"cannot install the candidate {spec!r}"
    python = make_venv(env_folder(envs, "candidate", spec), what)
    _install(python, what, "--upgrade", spec)
    return _env(spec, python, freeze(python))


def reference(spec: str, envs: Path, nightly: Path) -> Env:
    """The reference, pinned (module doc): installed from its lock file when ``nightly`` holds one
    for ``spec``, else from ``spec`` with the lock written."""
    if is_interpreter(spec):
        return _env(spec, spec, freeze(spec))
    what = f"cannot install the reference {spec!r}"
    path, pins = nightly / "pins.json", {}
    if path.is_file():
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise HarnessError(
                f"{path} cannot be read ({e}); move it out to pin the reference afresh."
            ) from None
        pins = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    python = make_venv(env_folder(envs, "reference", spec), what)
    if spec in pins:
        lock = nightly / f"reference-{pins[spec]}.txt"
        if not lock.is_file():
            raise HarnessError(f"{what}: its lock file {lock} is missing (named in {path}).")
        if freeze(python) != lock.read_text() or suite_at(python) != str(suite_root()):
            _install(python, f"{what} from its lock file {lock}", "-r", str(lock))
        text = freeze(python)
        if pin_of(text) != pins[spec]:
            raise HarnessError(
                f"{what}: after installing {lock} the environment {python} differs from it "
                f"(pin {pin_of(text)}, expected {pins[spec]}); remove {Path(python).parents[1]} and rerun."
            )
    else:
        _install(python, what, spec)
        text = freeze(python)
        nightly.mkdir(parents=True, exist_ok=True)
        (nightly / f"reference-{pin_of(text)}.txt").write_text(text)
        path.write_text(json.dumps({**pins, spec: pin_of(text)}, indent=1) + "\n")
    return _env(spec, python, text)
