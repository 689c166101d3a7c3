"""Doctor probe processes: start ``python -m harness.worker.probe`` children and collect their JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from harness.launch.contract import WORKER_ENV
from harness.launch.process import STDERR_TAIL_LINES, stop

# ------------------------------------------------------------------------------------------------
# Probe processes (harness doctor)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeResult:
    """What one probe process printed (JSON lines) and how it ended."""

    lines: list[dict[str, Any]]
    returncode: int | None
    """Exit status; negative: killed by that signal; None: stopped at the deadline."""
    stderr_tail: str


def run_probe_processes(argvs: list[list[str]], envs: list[dict[str, str]], timeout_s: float
                        ) -> list[ProbeResult]:
    """Start ``python -m`` + each argv at once (with its extra environment), wait for all up to
    ``timeout_s``, stop the rest; returns each one's JSON lines, exit status and stderr tail."""
    procs = []
    for argv, extra in zip(argvs, envs):
        env = {**os.environ, **WORKER_ENV, **extra}
        procs.append(subprocess.Popen([sys.executable, "-m", *argv], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env,
                                      start_new_session=True))
    deadline = time.monotonic() + timeout_s
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            stop(proc)  # type: ignore[arg-type]
            out, err = proc.communicate()
            code = None
        lines = []
        for line in out.splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        results.append(ProbeResult(lines, code, "\n".join(err.splitlines()[-STDERR_TAIL_LINES:])))
    return results
