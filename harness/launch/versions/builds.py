"""TensorFlow builds for ``bisect``: which ones the package index offers, each installed on its own
beside one environment that holds everything else fixed (docs/how-to/bisect.md).

- **The index**: a simple repository (PEP 691 JSON) or a folder of wheels (``pip --find-links``);
  only wheels this interpreter can install count (:func:`packaging.tags.sys_tags`).
- **The held environment** (``<envs>/bisect-held-<good spec>``): its ``pip freeze`` (``held.txt``)
  is hashed into a pin.
- **A build** (``<envs>/bisect-builds/<dist>-<version>``): complete once its ``probe.json`` is
  written; a killed install leaves a ``.partial`` folder the next try removes."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from harness.contract.wheels import Wheel
from harness.errors import HarnessError
from harness.launch.versions.envs import env_folder, freeze, make_venv, pin_of, pip, suite_root

DEFAULT_INDEX = "https://pypi.org/simple"
TF_DISTS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly", "tf-nightly-cpu")
"""The distributions that install the ``tensorflow`` package (removed from the held environment)."""
NIGHTLY_OF = {"tensorflow": "tf-nightly", "tensorflow-cpu": "tf-nightly-cpu"}
"""A release's nightly distribution (a nightly's is itself)."""
HELD_SHOWN = ("keras", "numpy", "ml-dtypes", "protobuf", "h5py", "tensorboard")
"""The held distributions a bisect's report names."""
PROBE = (
    "import json, tensorflow as tf, keras, numpy; print(json.dumps({'tf_version': tf.__version__, "
    "'git_version': tf.version.GIT_VERSION, 'keras_version': keras.__version__, "
    "'numpy_version': numpy.__version__, 'tf_file': tf.__file__}))"
)
PROBE_FILE = "probe.json"
INDEX_TIMEOUT_S = 120.0
IMPORT_TIMEOUT_S = 300.0


class BuildError(Exception):
    """A build that did not install or import: the bisect skips it, naming this message."""


@dataclass(frozen=True)
class IndexFile:
    """One wheel the index offers: its version and upload day (``YYYY-MM-DD``, "" unknown)."""

    version: str
    uploaded: str


@dataclass(frozen=True)
class Index:
    """A package index: an http(s) simple repository, or a local folder of wheels."""

    where: str

    @property
    def folder(self) -> Path | None:
        if self.where.startswith("file://"):
            return Path(urllib.parse.urlparse(self.where).path)
        return None if "://" in self.where else Path(self.where)

    def pip_args(self) -> list[str]:
        """pip's flags that install from this index alone."""
        if self.folder is not None:
            return ["--no-index", "--find-links", str(self.folder)]
        return ["--index-url", self.where]

    def files(self, dist: str) -> list[IndexFile]:
        """The wheels of ``dist`` this interpreter can install (HarnessError: index unreadable)."""
        names = self._folder_files(dist) if self.folder is not None else self._simple_files(dist)
        tags = set(sys_tags())
        out = []
        for filename, uploaded in names:
            try:
                name, version, _, wheel_tags = parse_wheel_filename(filename)
            except (InvalidWheelFilename, InvalidVersion):
                continue
            if name == canonicalize_name(dist) and tags & set(wheel_tags):
                out.append(IndexFile(str(version), uploaded))
        return out

    def _folder_files(self, dist: str) -> list[tuple[str, str]]:
        folder = self.folder
        assert folder is not None
        if not folder.is_dir():
            raise HarnessError(
                f"Received --index {self.where!r}: no such folder of wheels; expected a folder of "
                "TensorFlow wheels or a package index URL."
            )
        prefix = canonicalize_name(dist).replace("-", "_")
        return [
            (p.name, dt.date.fromtimestamp(p.stat().st_mtime).isoformat())
            for p in sorted(folder.glob("*.whl"))
            if p.name.lower().startswith(prefix + "-")
        ]

    def _simple_files(self, dist: str) -> list[tuple[str, str]]:
        url = f"{self.where.rstrip('/')}/{canonicalize_name(dist)}/"
        request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        try:
            with urllib.request.urlopen(request, timeout=INDEX_TIMEOUT_S) as reply:
                data = json.load(reply)
        except (OSError, urllib.error.URLError, ValueError) as e:
            raise HarnessError(
                f"cannot read the package index at {url} ({e}); --index expected a simple repository "
                "URL or a folder of wheel files."
            ) from None
        return [(f["filename"], str(f.get("upload-time") or "")[:10]) for f in data.get("files", [])]


def _date(version: Version, uploaded: str) -> str:
    """A nightly's day from its version (``devYYYYMMDD``), else the upload day."""
    dev = str(version.dev or "")
    if len(dev) == 8 and dev.isdigit():
        return f"{dev[:4]}-{dev[4:6]}-{dev[6:]}"
    return uploaded


def _versions(index: Index, dist: str) -> dict[Version, str]:
    """``dist``'s versions on the index -> upload day (the earliest of its wheels)."""
    out: dict[Version, str] = {}
    for f in index.files(dist):
        v = Version(f.version)
        out[v] = min(filter(None, (out.get(v), f.uploaded)), default="")
    return out


def requirement(flag: str, spec: str) -> Requirement:
    """``spec`` parsed (HarnessError naming ``flag`` when it is not a requirement)."""
    try:
        return Requirement(spec)
    except InvalidRequirement as e:
        why = str(e).splitlines()[0].rstrip()
        raise HarnessError(
            f"Received {flag}={spec!r}: not a requirement ({why}); expected e.g. 'tensorflow-cpu==2.20.*'."
        ) from None


def resolve(flag: str, spec: str, index: Index) -> Wheel:
    """The newest version on the index that ``spec`` admits (HarnessError naming ``flag`` if none)."""
    req = requirement(flag, spec)
    versions = _versions(index, req.name)
    admitted = sorted(req.specifier.filter(versions))
    if not admitted:
        near = ", ".join(str(v) for v in sorted(versions)[-5:]) or "none"
        raise HarnessError(
            f"Received {flag}={spec!r}: no wheel of {req.name} for this Python and platform on "
            f"{index.where} matches it; expected one of its versions (the newest: {near})."
        )
    v = admitted[-1]
    return Wheel(req.name, str(v), _date(v, versions[v]))


def nightly_dist(good: Wheel, bad: Wheel) -> str:
    """The distribution whose dated builds lie between ``good`` and ``bad``."""
    dist = canonicalize_name(bad.dist)
    return NIGHTLY_OF.get(dist, dist)


def candidates(index: Index, dist: str, good: Wheel, bad: Wheel) -> list[Wheel]:
    """``dist``'s builds strictly between the good and the bad build's versions, oldest first."""
    lo, hi = Version(good.version), Version(bad.version)
    versions = _versions(index, dist)
    return [Wheel(dist, str(v), _date(v, versions[v])) for v in sorted(versions) if lo < v < hi]


@dataclass(frozen=True)
class Held:
    """The held environment: its interpreter and its ``pip freeze`` (TensorFlow left out)."""

    python: str
    freeze: str

    @property
    def pin(self) -> str:
        return pin_of(self.freeze)

    def shown(self) -> str:
        """The held distributions a report names, e.g. ``keras==3.15.1, numpy==2.4.6``."""
        lines = {str(canonicalize_name(line.split("==")[0])): line for line in self.freeze.splitlines()}
        return ", ".join(lines[d] for d in HELD_SHOWN if d in lines)


def held(good: Wheel, envs: Path, index: Index) -> Held:
    """The held environment for the good build, built once under ``envs`` (a folder of wheels adds
    to pip's own index)."""
    spec = good.spec
    folder = env_folder(envs.resolve(), "bisect-held", spec)
    lock = folder / "held.txt"
    what = f"cannot build the environment the builds share (from {spec!r})"
    python = make_venv(folder, what)
    if not lock.is_file():
        where = [a for a in index.pip_args() if a != "--no-index"]
        pip(python, what, "install", "-q", *where, "-e", str(suite_root()), spec)
        pip(python, what, "uninstall", "-y", "-q", *TF_DISTS, timeout=600)
        lock.write_text(freeze(python))
    return Held(python, lock.read_text())


def folder_of(build: Wheel, envs: Path) -> Path:
    return envs.resolve() / "bisect-builds" / f"{canonicalize_name(build.dist)}-{build.version}"


@dataclass(frozen=True)
class Installed:
    """A build ready to run: its folder (the workers' ``PYTHONPATH``) and what it imported as."""

    build: Wheel
    folder: str
    tf_version: str
    git_version: str
    keras_version: str

    @property
    def env(self) -> tuple[tuple[str, str], ...]:
        """The variables its workers get."""
        return (("PYTHONPATH", self.folder),)


def _probe(python: str, folder: Path, build: Wheel) -> dict[str, str]:
    """What the held interpreter imports from ``folder`` (BuildError: not ``build``'s TensorFlow)."""
    env = {**os.environ, "PYTHONPATH": str(folder), "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        proc = subprocess.run(
            [python, "-c", PROBE], capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S, env=env
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise BuildError(f"importing it: {e}") from None
    if proc.returncode != 0:
        raise BuildError(f"importing it: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    try:
        probe = {str(k): str(v) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
        same = Version(probe["tf_version"]) == Version(build.version)
    except (ValueError, IndexError, KeyError, AttributeError, InvalidVersion) as e:
        raise BuildError(f"importing it printed no version ({e!r})") from None
    if not same or not probe.get("tf_file", "").startswith(str(folder)):
        raise BuildError(
            f"importing it gave TensorFlow {probe['tf_version']} from {probe.get('tf_file')}, not "
            f"{build.version} from {folder}"
        )
    return probe


def install(build: Wheel, envs: Path, index: Index, held_env: Held) -> Installed:
    """``build``'s wheel in its own folder, imported by the held interpreter (cached; probed again
    when the held environment changed). BuildError when pip or the import fails, or the import
    resolves to another TensorFlow; nothing half-installed is left behind."""
    folder = folder_of(build, envs)
    probe_path = folder / PROBE_FILE
    try:  # {} where there is no probe file, or only part of one
        probe = {str(k): str(v) for k, v in json.loads(probe_path.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        probe = {}
    if probe.get("held_pin") == held_env.pin:
        return _installed(build, folder, probe)
    if not probe:
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        args = ["install", "-q", "--no-deps", "--no-compile", "--target", str(partial), *index.pip_args()]
        try:
            pip(held_env.python, f"pip {build.spec}", *args, build.spec)
        except HarnessError as e:
            shutil.rmtree(partial, ignore_errors=True)
            raise BuildError(str(e)) from None
        partial.rename(folder)
    try:
        probe = {**_probe(held_env.python, folder, build), "held_pin": held_env.pin}
    except BuildError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    written = probe_path.with_name(PROBE_FILE + ".partial")
    written.write_text(json.dumps(probe))
    written.replace(probe_path)  # whole or absent, whenever a kill comes
    return _installed(build, folder, probe)


def _installed(build: Wheel, folder: Path, probe: dict[str, str]) -> Installed:
    return Installed(build, str(folder), probe["tf_version"], probe["git_version"], probe["keras_version"])
