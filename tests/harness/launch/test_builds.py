"""The package index and the builds' folders, on a fake index: a folder of tiny wheels whose
``tensorflow`` package is a stub (no real TensorFlow)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
from packaging.tags import sys_tags

from harness.analysis.bisect import Build
from harness.errors import HarnessError
from harness.launch import builds

TAG = next(iter(sys_tags()))
STUB = "__version__ = {version!r}\nclass version:\n    GIT_VERSION = 'v1.12.1-{n}-gabc{n:04d}'\n"


def wheel(folder: Path, dist: str, version: str, n: int = 0, broken: bool = False) -> Path:
    """A wheel of ``dist`` whose ``tensorflow`` module reports ``version`` (``broken``: fails to import)."""
    name = dist.replace("-", "_")
    path = folder / f"{name}-{version}-{TAG.interpreter}-{TAG.abi}-{TAG.platform}.whl"
    info = f"{name}-{version}.dist-info"
    body = (
        "raise ImportError('libtensorflow_framework.so.2: cannot open shared object file')\n"
        if broken
        else (STUB.format(version=version, n=n))
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tensorflow/__init__.py", body)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        z.writestr(
            f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {TAG}\n"
        )
        z.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def index(tmp_path: Path) -> builds.Index:
    folder = tmp_path / "index"
    folder.mkdir()
    for v in ("2.19.0", "2.20.0", "2.21.0", "2.20.0rc1"):
        wheel(folder, "tensorflow-cpu", v)
    for i, day in enumerate(("20250818", "20250901", "20251002", "20260203")):
        wheel(folder, "tf-nightly-cpu", f"2.21.0.dev{day}", i)
    wheel(folder, "tf-nightly-cpu", "2.20.0.dev20250601")
    wheel(folder, "tf-nightly-cpu", "2.22.0.dev20260301")
    (folder / "tf_nightly_cpu-2.21.0.dev20250820-cp27-cp27m-win32.whl").write_bytes(b"")  # another platform
    return builds.Index(str(folder))


def test_resolve_takes_the_newest_release_the_spec_admits(index: builds.Index) -> None:
    assert builds.resolve("--good", "tensorflow-cpu==2.20.*", index).version == "2.20.0"
    assert builds.resolve("--bad", "tensorflow-cpu<2.22", index).version == "2.21.0"


def test_resolve_names_the_versions_there_when_none_matches(index: builds.Index) -> None:
    with pytest.raises(HarnessError, match=r"--good='tensorflow-cpu==2.30\.\*'.*2\.21\.0"):
        builds.resolve("--good", "tensorflow-cpu==2.30.*", index)
    with pytest.raises(HarnessError, match="not a requirement"):
        builds.resolve("--good", "tensorflow cpu 2.20", index)


def test_candidates_are_the_nightlies_between_oldest_first_with_their_dates(index: builds.Index) -> None:
    good = builds.resolve("--good", "tensorflow-cpu==2.20.*", index)
    bad = builds.resolve("--bad", "tensorflow-cpu==2.21.*", index)
    dist = builds.nightly_dist(good, bad)
    assert dist == "tf-nightly-cpu"
    between = builds.candidates(index, dist, good, bad)
    assert [b.version for b in between] == [
        f"2.21.0.dev{d}" for d in ("20250818", "20250901", "20251002", "20260203")
    ]
    assert between[0].date == "2025-08-18"


def test_a_missing_index_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="no such folder"):
        builds.Index(str(tmp_path / "nowhere")).files("tensorflow-cpu")


@pytest.mark.process
def test_install_puts_the_wheel_alone_in_its_folder_and_probes_it(
    index: builds.Index, tmp_path: Path
) -> None:
    held = builds.Held(sys.executable, "keras==3.15.1\n")
    build = Build("tf-nightly-cpu", "2.21.0.dev20250901", "2025-09-01")
    probe = builds.PROBE.replace("keras.__version__", "'stub'").replace(", keras, numpy", ", numpy")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(builds, "PROBE", probe)
        got = builds.install(build, tmp_path / "envs", index, held)
        assert got.tf_version == "2.21.0.dev20250901" and got.git_version == "v1.12.1-1-gabc0001"
        assert got.env == (("PYTHONPATH", got.folder),)
        assert (Path(got.folder) / "tensorflow" / "__init__.py").is_file()
        assert builds.install(build, tmp_path / "envs", index, held) == got  # cached


@pytest.mark.process
def test_a_build_that_will_not_install_or_import_is_a_build_error(
    index: builds.Index, tmp_path: Path
) -> None:
    held = builds.Held(sys.executable, "")
    with pytest.raises(builds.BuildError, match="exited"):
        builds.install(
            Build("tf-nightly-cpu", "2.21.0.dev20250999", "2025-09-30"), tmp_path / "envs", index, held
        )
    assert index.folder is not None
    wheel(index.folder, "tf-nightly-cpu", "2.21.0.dev20251111", broken=True)
    with pytest.raises(builds.BuildError, match="cannot open shared object"):
        builds.install(
            Build("tf-nightly-cpu", "2.21.0.dev20251111", "2025-11-11"), tmp_path / "envs", index, held
        )
    assert not list((tmp_path / "envs" / "bisect-builds").iterdir())  # nothing half-installed left
