"""The package index and the builds' folders, on a fake index: a folder of tiny wheels whose
``tensorflow`` package is a stub (no real TensorFlow)."""

from __future__ import annotations

import dataclasses
import json
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.tags import sys_tags

from harness.analysis.versions import ab
from harness.analysis.versions import bisect as bs
from harness.contract.wheels import Wheel
from harness.errors import HarnessError
from harness.launch.versions import bisect as lb
from harness.launch.versions import builds
from harness.results.journal import Journal
from tests.harness.launch.versions.test_bisect import FakeMeasurer

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
    build = Wheel("tf-nightly-cpu", "2.21.0.dev20250901", "2025-09-01")
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
            Wheel("tf-nightly-cpu", "2.21.0.dev20250999", "2025-09-30"),
            tmp_path / "envs",
            index,
            held,
        )
    assert index.folder is not None
    wheel(index.folder, "tf-nightly-cpu", "2.21.0.dev20251111", broken=True)
    with pytest.raises(builds.BuildError, match="cannot open shared object"):
        builds.install(
            Wheel("tf-nightly-cpu", "2.21.0.dev20251111", "2025-11-11"),
            tmp_path / "envs",
            index,
            held,
        )
    assert not list((tmp_path / "envs" / "bisect-builds").iterdir())  # nothing half-installed left


@pytest.mark.process
def test_a_cached_build_is_probed_again_when_the_held_environment_changed(
    index: builds.Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = builds.PROBE.replace("keras.__version__", "'stub'").replace(", keras, numpy", ", numpy")
    monkeypatch.setattr(builds, "PROBE", probe)
    build = Wheel("tf-nightly-cpu", "2.21.0.dev20250818", "2025-08-18")
    first = builds.install(build, tmp_path / "envs", index, builds.Held(sys.executable, "keras==3.15.1\n"))
    marker = Path(first.folder) / "tensorflow" / "marker"
    marker.write_text("the wheel is not installed again")
    other = builds.Held(sys.executable, "keras==3.16.0\n")
    again = builds.install(build, tmp_path / "envs", index, other)
    assert again == first and marker.is_file()
    assert json.loads((Path(first.folder) / builds.PROBE_FILE).read_text())["held_pin"] == other.pin
    (Path(first.folder) / builds.PROBE_FILE).write_text('{"tf_vers')  # a probe cut short by a kill
    assert builds.install(build, tmp_path / "envs", index, other) == first and not marker.is_file()


@pytest.mark.process
def test_a_bisect_on_a_fake_index_finds_the_planted_build_and_skips_the_broken_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole loop with real installs from a folder of stub wheels (30 nightlies, the one of
    2025-10-19 broken), measured by a fake whose speed drops from the 2025-10-23 build on."""
    folder = tmp_path / "index"
    folder.mkdir()
    wheel(folder, "tensorflow-cpu", "2.20.0")
    wheel(folder, "tensorflow-cpu", "2.21.0")
    for day in range(1, 31):
        wheel(folder, "tf-nightly-cpu", f"2.21.0.dev202510{day:02d}", day, broken=day == 19)
    index = builds.Index(str(folder))
    good, bad = (
        builds.resolve("--good", "tensorflow-cpu==2.20.*", index),
        builds.resolve("--bad", "tensorflow-cpu==2.21.*", index),
    )
    between = builds.candidates(index, builds.nightly_dist(good, bad), good, bad)
    probe = builds.PROBE.replace("keras.__version__", "'stub'").replace(", keras, numpy", ", numpy")
    monkeypatch.setattr(builds, "PROBE", probe)
    held = builds.Held(sys.executable, "keras==3.15.1\n")
    everything = [good, *between, bad]
    path = tmp_path / "bisect" / lb.JOURNAL
    Journal.create(path, {"builds": [dataclasses.asdict(b) for b in everything]}).close()

    class ByDate(FakeMeasurer):
        def speed(self, inst: builds.Installed) -> float:
            slow = inst.build.version == "2.21.0" or (inst.build.nightly and inst.build.date >= "2025-10-23")
            return 0.85 if slow else 1.0

    settings = lb.Settings(ab.Rule(min_pairs=4, max_pairs=12), 0, 3600)
    with Journal.reopen(path) as j:
        result = lb.Bisect(
            j,
            settings,
            lambda b: builds.install(b, tmp_path / "envs", index, held),
            ByDate(0),
            lambda s: None,
        ).run()
    assert result.done is not None and result.done.outcome is bs.Ending.FOUND
    assert (everything[result.done.lo].date, everything[result.done.hi].date) == ("2025-10-22", "2025-10-23")
    assert (
        len([m for m in result.state.measured if m.step.kind is bs.Kind.MIDPOINT]) <= 6
    )  # log2(31) + a skip
