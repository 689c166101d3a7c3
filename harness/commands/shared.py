"""What several commands share besides their flags (:mod:`harness.commands.selection`) and their
``--json`` object (:mod:`harness.commands.output`): how a measuring command stops on a signal,
the ``K=V`` environment flags of ``ab``'s and ``nightly``'s two sides, and a paired decision as
``ab``'s and ``bisect``'s ``--json`` give it. No command module
imports another command module; they import this one."""

from __future__ import annotations

import signal
from typing import Any

from harness.analysis.ab import Decision
from harness.contract.outputs import Paired
from harness.errors import HarnessError


def paired(d: Decision, failure: str) -> Paired:
    """A decision B/A over pairs (and why there is none, if) as ``--json`` gives it."""
    return Paired(
        ratio=d.ratio, ci_low=d.low, ci_high=d.high, pairs=d.pairs, verdict=d.verdict, failure=failure
    )


def interrupt_on_sigterm() -> None:
    """A scheduler's or CI's SIGTERM stops the run like Ctrl-C: workers stopped, rows kept. Ctrl-C
    (SIGINT) is handled even when a wrapper started this process with SIGINT ignored (Python then
    installs no handler of its own)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def parse_env(flag: str, items: list[str]) -> tuple[tuple[str, str], ...]:
    """``--baseline-env``/``--candidate-env`` values as (key, value) pairs; HarnessError naming
    ``flag`` for an item that is not ``KEY=VALUE``."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HarnessError(f"Received {flag} {item!r}; expected KEY=VALUE, e.g. TF_ENABLE_ONEDNN_OPTS=0.")
        out.append((key, value))
    return tuple(out)
