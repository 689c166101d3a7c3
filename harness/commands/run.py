"""TODO docstring: commands.run."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

from harness.commands.selection import Selection, _platform_text
from harness.errors import EXIT_INTERRUPTED


def _interrupt_on_sigterm() -> None:
    """A scheduler's or CI's SIGTERM stops the run like Ctrl-C: workers stopped, rows kept. Ctrl-C
    (SIGINT) is handled even when a wrapper started this process with SIGINT ignored (Python then
    installs no handler of its own)."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def cmd_cluster_task(sel: Selection, out: Path) -> int:
    """A task of a real cluster other than the chief: a peer takes part in every cell, a server
    serves the whole run; neither writes results."""
    import datetime as dt

    from harness.launch.contract import WorkerOptions
    from harness.launch.real_cluster import run_cluster_task, serve_cluster_task
    from harness.launch.runner import follow_sweep

    config = sel.cluster
    assert config is not None
    task = f"{config.task_type}{config.task_index}"
    stamp = dt.datetime.now(dt.timezone.utc)
    log_dir = out / "logs" / stamp.strftime("%Y-%m-%d") / f"{stamp:%Y%m%dT%H%M%SZ}-{task}"
    print(f"cluster task {config.task_type} {config.task_index} ({config.role}) at {config.address}; "
          f"logs -> {log_dir}", flush=True)
    try:
        if config.role == "server":
            options = WorkerOptions(sel.protocol, sel.platform, log_dir, sel.mnist_path)
            code = serve_cluster_task(sel.cells[0], options, config)
            print(f"server exited with code {code}")
            return 0 if code == 0 else 1
        counts = follow_sweep(sel.cells, sel.protocol, sel.platform, log_dir,
                              lambda c, o, n: run_cluster_task(c, o, n, config), sel.mnist_path)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"peer done: {counts['finished']} cells finished, {counts['failed']} failed")
    return 0


def cmd_run(sel: Selection, out: Path) -> int:
    from harness.analysis.tables import (
        FOOTNOTE,
        LOGICAL_NOTE,
        OVERSUBSCRIBED_NOTE,
        summary_table,
    )
    from harness.launch.real_cluster import run_cluster_task
    from harness.launch.runner import run_cell_processes, run_sweep

    config = sel.cluster
    if config is not None and config.role != "chief":
        return cmd_cluster_task(sel, out)
    launcher = run_cell_processes if config is None else (
        lambda c, o, n: run_cluster_task(c, o, n, config))
    where = "" if config is None else (f" as the chief of a {config.workers}-worker"
                                       + (f", {config.ps}-ps" if config.ps else "") + " cluster")
    print(f"sweep {sel.sweep.name!r}: {len(sel.cells)} cells on {_platform_text(sel.platform)}"
          f"{where}; results -> {out}", flush=True)
    result = run_sweep(sel.cells, sel.protocol, sel.platform, out, sel.mnist_path, launcher=launcher)
    print()
    print(summary_table(result.rows))
    print()
    print(FOOTNOTE.format(repeats=sel.protocol.repeats, window_s=sel.protocol.window_s))
    if any(r.get("logical_devices") for r in result.rows):
        print(LOGICAL_NOTE)
    if any(r.get("oversubscribed") for r in result.rows):
        print(OVERSUBSCRIBED_NOTE)
    counts: dict[str, int] = {}
    for r in result.rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"run {result.run_id}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for p in result.paths:
        print(f"wrote {p}")
    if result.interrupted:
        print(f"interrupted: {result.not_run} cells not run; every row measured before is kept.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
