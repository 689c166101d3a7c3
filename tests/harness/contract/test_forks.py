"""Which variables decide a worker's fork server (pure)."""

from __future__ import annotations

from harness.contract.forks import server_env


def test_per_process_variables_share_a_server_and_any_other_difference_does_not() -> None:
    base = {"PATH": "/usr/bin", "TF_CPP_MIN_LOG_LEVEL": "2"}
    chief = {**base, "TF_CONFIG": '{"task": {"type": "chief"}}', "HARNESS_TURNS": "/tmp/a.sock"}
    worker = {**base, "TF_CONFIG": '{"task": {"type": "worker"}}', "HARNESS_TURN_MEMBER": "m1"}
    assert server_env(chief) == server_env(worker) == base
    # read at import (or possibly so): a server of its own
    for key, value in {
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "CUDA_VISIBLE_DEVICES": "1",
        "OMP_NUM_THREADS": "1",
    }.items():
        assert server_env({**base, key: value}) != server_env(base)
    assert server_env({**base, "NCCL_DEBUG_FILE": "/tmp/x/nccl.%p.log"}) == base
