"""``--model FILE.py:function`` and ``package.module:function`` checked and pinned in the parent
(nothing imported): the digest of the source, a readable path-safe cell id, a clear error for a
missing file, module or function, or a file that does not parse."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.commands.user_models import resolve_model
from harness.errors import HarnessError
from harness.spec.cell import Cell
from harness.spec.models import parse_ref

SOURCE = "import keras\n\n\ndef mlp(batch):\n    return keras.Sequential([keras.layers.Dense(10)])\n"


def test_a_file_is_pinned_to_its_digest_and_gets_a_readable_id(tmp_path: Path) -> None:
    path = tmp_path / "my_models.py"
    path.write_text(SOURCE)

    model = resolve_model(f"{path}:mlp")

    ref = parse_ref(model)
    assert ref is not None and ref.source == str(path.resolve()) and ref.function == "mlp"
    cell = Cell(model=model, strategy="default")
    assert cell.id.startswith(f"my_models.mlp@{ref.digest[:8]}/default/") and cell.id.count("/") == 9
    path.write_text(SOURCE + "# changed\n")
    assert parse_ref(resolve_model(f"{path}:mlp")).digest != ref.digest  # type: ignore[union-attr]


def test_a_module_is_found_on_the_path_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "zoo"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")  # would fail if imported
    (package / "nets.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))

    ref = parse_ref(resolve_model("zoo.nets:mlp"))

    assert ref is not None and ref.source == "zoo.nets" and ref.label.startswith("zoo.nets.mlp@")
    assert "zoo" not in sys.modules


@pytest.mark.parametrize(
    "text, message",
    [
        ("{tmp}/absent.py:mlp", "the file {tmp}/absent.py does not exist"),
        ("{tmp}/m.py:cnn", "defines no 'cnn' at its top level (it defines: mlp)"),
        ("{tmp}/broken.py:mlp", "does not parse"),
        ("{tmp}/m.py:not-a-name", "expected FILE.py:function or package.module:function"),
        ("no.such.module:mlp", "no module 'no.such.module' on the Python path"),
    ],
)
def test_a_bad_reference_is_an_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "broken.py").write_text("def mlp(:\n")
    with pytest.raises(HarnessError) as e:
        resolve_model(text.format(tmp=tmp_path))
    assert message.format(tmp=tmp_path) in str(e.value) and "Received --model=" in str(e.value)


def test_built_in_names_pass_through() -> None:
    assert resolve_model("resnet50") == "resnet50" and parse_ref("resnet50") is None
