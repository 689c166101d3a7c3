"""``--model FILE.py:function`` and ``--model package.module:function``: a user's model checked and
pinned before any process starts (the parent never imports it: it would import TensorFlow;
docs/how-to/own-model.md). The file must define ``function`` at its top level (read with
:mod:`ast`); a module is looked for on ``sys.path`` and in the working folder without importing it
(no package ``__init__`` runs). The reference becomes ``<absolute path or module>:<function>@<digest>``
(:class:`harness.spec.models.ModelRef`: the first 12 hex digits of the source's SHA-256)."""

from __future__ import annotations

import ast
import hashlib
import re
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.spec.models import MODEL_NAMES, ModelRef

MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
FUNCTION = re.compile(r"^[A-Za-z_]\w*$")


def _module_file(module: str) -> Path | None:
    """The source file of ``module`` on ``sys.path`` (or in the working folder), not imported."""
    parts = module.split(".")
    for entry in ["", *sys.path]:
        base = Path(entry or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _defines(path: Path, function: str, flag_value: str) -> None:
    """HarnessError unless ``path`` parses and defines ``function`` at its top level."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as e:
        raise HarnessError(
            f"Received --model={flag_value!r}; {path} does not parse: {e.msg} (line {e.lineno})."
        ) from None
    names = [
        n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ] + [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    if function not in names:
        shown = ", ".join(n for n in names if not n.startswith("_")) or "none"
        raise HarnessError(
            f"Received --model={flag_value!r}; {path} defines no {function!r} at its top level "
            f"(it defines: {shown})."
        )


def resolve_model(text: str) -> str:
    """A built-in name as it is; a user's ``FILE.py:function`` or ``package.module:function``
    checked and pinned (see the module doc); HarnessError naming what is wrong."""
    if text in MODEL_NAMES or ":" not in text:
        return text  # a built-in name, or a bad one that the axis names with the accepted ones
    source, _, function = text.rpartition(":")
    if not FUNCTION.match(function):
        raise HarnessError(
            f"Received --model={text!r}; expected FILE.py:function or package.module:function."
        )
    if source.endswith(".py"):
        path = Path(source).expanduser()
        if not path.is_file():
            raise HarnessError(f"Received --model={text!r}; the file {path} does not exist.")
        path, pinned = path.resolve(), str(path.resolve())
    elif MODULE.match(source):
        found = _module_file(source)
        if found is None:
            raise HarnessError(
                f"Received --model={text!r}; no module {source!r} on the Python path or in the working folder."
            )
        path, pinned = found, source
    else:
        raise HarnessError(
            f"Received --model={text!r}; expected FILE.py:function or package.module:function."
        )
    _defines(path, function, text)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return ModelRef(pinned, function, digest)
