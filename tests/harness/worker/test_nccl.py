"""The transports NCCL chose, read from its INFO log."""

from __future__ import annotations

from pathlib import Path

from harness.launch.system.process import nccl_log_env
from harness.spec.protocol import Platform
from harness.worker.nccl import process_transports, transports

LOG = """\
h100:4711:4790 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
h100:4711:4790 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h100:4711:4790 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h100:4711:4790 [0] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct
h100:4711:4790 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/Socket/0
h100:4711:4790 [0] NCCL INFO Connected all rings
"""


def test_each_transport_once_in_order() -> None:
    assert transports(LOG) == ["P2P/CUMEM", "SHM", "NET/Socket"]
    assert transports("NCCL INFO Channel 00 : 0[3000] -> 1[4000] via P2P/IPC\n") == ["P2P/IPC"]
    assert transports("no nccl here") == []


def test_the_process_log_is_found_by_pid(tmp_path: Path) -> None:
    (tmp_path / "nccl.4711.log").write_text(LOG)
    pattern = str(tmp_path / "nccl.%p.log")
    assert process_transports(pattern, 4711) == "P2P/CUMEM,SHM,NET/Socket"
    assert process_transports(pattern, 1) is None and process_transports(None, 4711) is None


def test_the_launcher_turns_the_log_on_for_gpu_workers_only(tmp_path: Path) -> None:
    env = nccl_log_env(Platform("gpu", 2), tmp_path, {})
    assert env == {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT",
        "NCCL_DEBUG_FILE": str(tmp_path / "nccl.%p.log"),
    }
    assert nccl_log_env(Platform(), tmp_path, {}) == {}
    assert nccl_log_env(Platform("gpu", 2), tmp_path, {"NCCL_DEBUG": "WARN"}) == {}  # the user's
