"""Facts recorded with every row: the threads TensorFlow really has, what the fingerprint ignores."""

from __future__ import annotations

import pytest

from harness.worker.fingerprint import effective_threads, fingerprint


@pytest.mark.parametrize(
    "setting, env, cpus, threads",
    [
        (0, None, 8, 8),  # TensorFlow's default: one per usable CPU (the affinity)
        (0, "2", 8, 2),  # a local worker throttled by the launcher
        (4, "2", 8, 4),  # tf.config wins
        (0, "junk", 8, 8),
        (0, "0", 8, 8),
    ],
)
def test_intra_op_threads_are_what_the_pool_has(setting, env, cpus, threads) -> None:
    assert effective_threads(setting, env, cpus) == threads


def test_the_nccl_log_settings_do_not_change_the_fingerprint() -> None:
    base = {"tf_version": "2.21.0", "env": {"NCCL_ALGO": "Ring"}}
    logged = {
        **base,
        "env": {
            **base["env"],
            "NCCL_DEBUG": "INFO",
            "NCCL_DEBUG_SUBSYS": "INIT",
            "NCCL_DEBUG_FILE": "/tmp/harness-x/nccl.%p.log",
        },
    }
    assert fingerprint(base) == fingerprint(logged)
    assert fingerprint(base) != fingerprint({**base, "env": {"NVIDIA_TF32_OVERRIDE": "0"}})
