"""The one process handle: events read as they come, phases with deadlines, failures in words, and
stop() ending the whole process group."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.launch.system.process import Deadline, Phase, Process, signal_text

pytestmark = pytest.mark.process

EMIT = (
    "import json, sys, time\n"
    "with open(sys.argv[1], 'a') as f:\n"
    "    f.write(json.dumps({'event': 'start'}) + '\\n'); f.flush()\n"
    "    f.write('not json\\n'); f.write(json.dumps({'event': 'ready'})); f.flush()\n"
    "    time.sleep(float(sys.argv[2]))\n"
    "    f.write('\\n'); f.flush()\n"
    "print('last words', flush=True)\n"
)


def _child(tmp_path: Path, sleep_s: float, deadline: Deadline | None = None) -> Process:
    events = tmp_path / "events.jsonl"
    return Process(
        ["-c", EMIT, str(events), str(sleep_s)], {}, tmp_path / "log" / "child.log", events, deadline=deadline
    )


def test_events_arrive_whole_lines_only(tmp_path: Path) -> None:
    proc = _child(tmp_path, 0.5)
    time.sleep(0.3)
    first = proc.read()
    assert first == [{"event": "start"}]  # the unfinished line waits, the non-JSON one is skipped
    assert proc.wait(10) == 0
    assert proc.read() == [{"event": "ready"}]
    assert "last words" in proc.tail()
    assert proc.failure("already exited").startswith("worker exited with exit code 0 during start-up")


def test_a_passed_deadline_is_reported_with_phase_and_how_it_was_stopped(tmp_path: Path) -> None:
    proc = _child(tmp_path, 60, Deadline(Phase.STARTUP, 0.2))
    proc.deadline.enter(Phase.CELL, 0.2, "cnn/default")
    time.sleep(0.4)
    assert proc.running and proc.deadline.overdue
    how = proc.stop(grace_s=2)
    assert how == "SIGTERM" and not proc.running
    text = proc.failure(how)
    assert text.startswith(
        "deadline passed: cell cnn/default took over 0.2 s; worker stopped with SIGTERM; worker log "
    )
    assert proc.stop() == "already exited"


def test_stop_kills_the_whole_group_with_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    code = (
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    events = tmp_path / "pid"
    proc = Process(["-c", code], {}, tmp_path / "p.log", events, events_on_stdout=True)
    deadline = time.monotonic() + 20
    while not events.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(events.read_text())
    assert proc.stop(grace_s=0.5) == "SIGTERM, then SIGKILL"
    time.sleep(0.2)
    try:
        os.kill(grandchild, 0)
        alive = Path(f"/proc/{grandchild}/stat").read_text().split()[2] != "Z"
    except ProcessLookupError:
        alive = False
    assert not alive


def test_signal_text() -> None:
    assert signal_text(-9) == "signal SIGKILL" and signal_text(1) == "exit code 1"


def test_a_kill_the_harness_did_not_send_names_the_memory_last_seen(tmp_path: Path) -> None:
    from harness.launch.system.platform import proc_bytes
    from harness.launch.system.process import killed_text

    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "status").write_text("Name:\tpython\nVmPeak:\t 9999 kB\nVmHWM:\t 3145728 kB\n")

    assert proc_bytes(f"{tmp_path}/42/status", "VmHWM") == 3 * 2**30  # what a process's peak_rss reads
    assert proc_bytes(f"{tmp_path}/43/status", "VmHWM") is None
    text = killed_text(3 * 2**30)
    assert "out-of-memory killer" in text and "up to 3.00 GiB" in text and "--max-live" in text
    assert "GiB" not in killed_text(0)


def test_a_crash_under_a_memory_cap_is_said_to_be_most_likely_memory() -> None:
    from harness.launch.system.process import capped_text

    text = capped_text(4.0, int(3.42 * 2**30))
    assert "capped at 4 GiB by --worker-memory-gib" in text and "up to 3.42 GiB" in text
