"""What an out-of-memory error asked for, from TensorFlow's message."""

from __future__ import annotations

from harness.formulas.memory import oom_text


def test_an_oom_message_says_how_many_bytes_its_tensor_asked_for() -> None:
    message = "OOM when allocating tensor with shape[1024,1024,1024] and type float on /device:CPU:0"
    assert oom_text(message) == " (4.00 GiB asked)"
    assert (
        oom_text("OOM when allocating tensor with shape[1024, 512, 1024] and type bfloat16")
        == " (1.00 GiB asked)"
    )
    assert oom_text("OOM when allocating tensor with shape[8] and type qint8") == ""  # unknown type
    assert oom_text("some other error") == ""
