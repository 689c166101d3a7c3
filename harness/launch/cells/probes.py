"""Doctor probe processes: ``python -m harness.worker.probe`` children on the common
:class:`~harness.launch.system.process.Process` handle, started together and collected with a deadline."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.contract.probes import PROBE_MODULE
from harness.launch.system.process import POLL_S, Deadline, Phase, Process


@dataclass(frozen=True)
class ProbeResult:
    """What one probe process printed (JSON lines) and how it ended."""

    lines: list[dict[str, Any]]
    returncode: int | None
    """Exit status; negative: killed by that signal; None: stopped at the deadline."""
    stderr_tail: str


def run_probe_processes(
    argvs: list[list[str]],
    envs: list[dict[str, str]],
    timeout_s: float,
    module: str = PROBE_MODULE,
    fork: bool = False,
) -> list[ProbeResult]:
    """Start ``python -m <module>`` + each argv at once (with its extra environment; ``fork``:
    forked from the run's fork server where one serves), wait for all up to ``timeout_s``, stop
    the rest; returns each one's JSON lines, exit status and log tail."""
    with tempfile.TemporaryDirectory(prefix="harness-probe-") as tmpdir:
        folder = Path(tmpdir)
        deadline = Deadline(Phase.PROBE, timeout_s)
        procs = [
            Process(
                ["-m", module, *argv],
                env,
                folder / f"probe-{i}.log",
                folder / f"probe-{i}.jsonl",
                events_on_stdout=True,
                deadline=deadline,
                fork=fork,
            )
            for i, (argv, env) in enumerate(zip(argvs, envs, strict=True))
        ]
        while any(p.running for p in procs) and not deadline.overdue:
            time.sleep(POLL_S)
        codes = [p.returncode for p in procs]
        for p in procs:
            p.stop()
        return [ProbeResult(p.read(), code, p.tail(sep="\n")) for p, code in zip(procs, codes, strict=True)]
