"""What an out-of-memory error asked for: the bytes of the tensor TensorFlow could not allocate,
from its message (``OOM when allocating tensor with shape[64,26,26,32] and type float``)."""

from __future__ import annotations

import math
import re

DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "half": 2,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}
"""TensorFlow's type names in its OOM message -> bytes per element."""

OOM = re.compile(r"OOM when allocating tensor with shape\[([\d,\s]*)\] and type (\w+)")


def oom_text(message: str) -> str:
    """`` (N GiB asked)`` after an OOM message that names its tensor (of a type in
    :data:`DTYPE_BYTES`): the tensor's bytes, in GiB; else ""."""
    found = OOM.search(message)
    if found is None or found[2] not in DTYPE_BYTES:
        return ""
    dims = [int(d) for d in found[1].replace(" ", "").split(",") if d]
    return f" ({math.prod(dims) * DTYPE_BYTES[found[2]] / 2**30:.2f} GiB asked)"
