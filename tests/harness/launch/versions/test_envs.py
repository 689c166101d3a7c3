"""nightly's environments with a fake interpreter standing in for a venv's (no registry): the
reference pinned by its freeze and reinstalled from the lock when it drifts, a reference that cannot
be installed named with pip's reason, an interpreter used as given."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.launch.versions import envs

pytestmark = pytest.mark.process

FAKE = """#!/bin/sh
# a venv's python: pip freeze prints STATE, pip install writes it, -c prints the versions
STATE="$(dirname "$0")/state"
echo "$@" >> "$(dirname "$0")/calls"
if [ "$1" = "-c" ]; then echo "TensorFlow $(sed -n 's/tensorflow-cpu==//p' "$STATE"), Keras 3.15.1"; exit 0; fi
if [ "$2" = "pip" ] && [ "$3" = "freeze" ]; then cat "$STATE"; exit 0; fi
if [ "$2" = "pip" ] && [ "$3" = "install" ]; then
  for a in "$@"; do last="$a"; done
  case "$*" in
    *" -r "*) cp "$last" "$STATE" ;;
    *2.99*) echo "ERROR: No matching distribution found for $last" >&2; exit 1 ;;
    *) printf 'keras==3.15.1\\ntensorflow-cpu==2.20.1\\n' > "$STATE" ;;
  esac
  exit 0
fi
exit 2
"""


def fake_venv(folder: Path) -> Path:
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    (python.parent / "state").write_text("")
    return python


SPEC = "tensorflow-cpu==2.20.*"


def test_the_reference_is_pinned_and_reinstalled_from_its_lock_when_it_drifts(tmp_path: Path) -> None:
    python = fake_venv(envs.env_folder(tmp_path / "envs", "reference", SPEC))
    nightly = tmp_path / "results" / "nightly"
    first = envs.reference(SPEC, tmp_path / "envs", nightly)
    assert first.versions == "TensorFlow 2.20.1, Keras 3.15.1"
    pins = json.loads((nightly / "pins.json").read_text())
    assert pins == {SPEC: first.pin}
    assert (nightly / f"reference-{first.pin}.txt").read_text() == "keras==3.15.1\ntensorflow-cpu==2.20.1\n"
    # a patch release the spec admits lands in the venv: the next night installs the lock instead
    (python.parent / "state").write_text("keras==3.15.1\ntensorflow-cpu==2.20.2\n")
    again = envs.reference(SPEC, tmp_path / "envs", nightly)
    assert again.pin == first.pin and again.versions == first.versions
    calls = (python.parent / "calls").read_text().splitlines()
    assert any(" -r " in f" {c} " and c.endswith(f"reference-{first.pin}.txt") for c in calls)
    assert sum(SPEC in c for c in calls if "install" in c) == 1  # the spec itself only the first night


def test_a_reference_that_cannot_be_installed_is_named(tmp_path: Path) -> None:
    spec = "tensorflow-cpu==2.99.*"
    fake_venv(envs.env_folder(tmp_path / "envs", "reference", spec))
    with pytest.raises(
        HarnessError,
        match=r"(?s)cannot install the reference 'tensorflow-cpu==2\.99\.\*'.*No matching distribution",
    ):
        envs.reference(spec, tmp_path / "envs", tmp_path / "nightly")
    assert not (tmp_path / "nightly" / "pins.json").exists()


def test_an_interpreter_is_used_as_given(tmp_path: Path) -> None:
    python = fake_venv(tmp_path / "side")
    (python.parent / "state").write_text("tensorflow-cpu==2.21.0\n")
    env = envs.candidate(str(python), tmp_path / "envs")
    assert env.python == str(python) and env.versions == "TensorFlow 2.21.0, Keras 3.15.1"
    assert env.pin == envs.pin_of("tensorflow-cpu==2.21.0\n")
    assert not (tmp_path / "envs").exists()
