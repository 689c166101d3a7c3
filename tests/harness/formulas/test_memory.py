"""What an out-of-memory error asked for, from TensorFlow's message."""

from __future__ import annotations

from harness.formulas.memory import oom_text, requested_bytes


def test_an_oom_message_says_how_many_bytes_its_tensor_asked_for() -> None:
    message = "OOM when allocating tensor with shape[1024,1024,1024] and type float on /device:CPU:0"
    assert requested_bytes(message) == 4 * 2**30 and oom_text(message) == " (4.00 GiB asked)"
    assert requested_bytes("OOM when allocating tensor with shape[8, 3] and type bfloat16") == 48
    assert requested_bytes("some other error") is None and oom_text("some other error") == ""
