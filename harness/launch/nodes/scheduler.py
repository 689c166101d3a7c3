"""What a real cluster's scheduler says about its tasks: to the chief, since when a task not yet
joined runs or its node is down (:func:`join_overdue`); to a task still joining, whether its job
step is over. Slurm's ``scontrol`` only; other schedulers say nothing (:data:`QUIET`)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

JOIN_BOUND_S = 30.0
"""Seconds a task has to join once the scheduler reports it running (or its node down)."""
ASK_EVERY_S = 2.0
"""Seconds between two questions to the scheduler about the same thing."""
UNREACHABLE = ("Unable to contact", "Socket timed out", "connect failure", "Connection refused")
"""scontrol's words when it cannot reach slurmctld (this node's link is down): nothing is known."""
Answer = tuple[int, str] | None
"""scontrol's exit code and output (None: no answer within 5 s)."""


@dataclass(frozen=True)
class Seen:
    """The scheduler reported a task running, or its node down: since when (monotonic s), in words,
    and the seconds it then has to join (0 for a node down: no slow start)."""

    since: float
    what: str
    grace_s: float = JOIN_BOUND_S


def join_overdue(now: float, started: float, seen: Seen | None, timeout_s: float) -> str | None:
    """Why a task not joined by ``now`` (monotonic s; waited for since ``started``) is lost: its
    grace past ``seen``, or ``timeout_s`` past ``started``; None: wait on."""
    if seen is not None and now - seen.since >= seen.grace_s:
        within = f" within {seen.grace_s:g} s of" if seen.grace_s else ";"
        return f"it never joined the chief's run lease{within} {seen.what}"
    if now - started > timeout_s:
        return f"it never joined the chief's run lease within {timeout_s:g} s"
    return None


def state_of(answer: Answer) -> str | None:
    """The ``State=`` of an scontrol answer; ``gone`` for an error other than an unreachable
    controller; None where nothing is known."""
    if answer is None or (answer[0] != 0 and any(w in answer[1] for w in UNREACHABLE)):
        return None
    states = [w[6:] for w in answer[1].split() if w.startswith("State=")]
    return states[0] if answer[0] == 0 and states else "gone"


def node_down(state: str | None) -> bool:
    """Whether a node's ``State`` (``IDLE``, ``DOWN*``, ``MIXED+DRAIN`` ...) says it is lost."""
    return state is not None and (
        state.endswith("*") or any(w in state for w in ("DOWN", "FAIL", "NOT_RESP"))
    )


def scontrol(*args: str) -> Answer:
    try:
        done = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode, done.stdout + done.stderr


class Watch:
    """A scheduler that says nothing: no task is known to run, no step ends."""

    def seen(self, host: str) -> Seen | None:
        return None

    def over(self) -> str | None:
        return None


QUIET = Watch()


class SlurmWatch(Watch):
    """Slurm job step ``JOB.STEP`` and its nodes, asked through ``ask`` at most every
    :data:`ASK_EVERY_S` s per question; a host is seen from the first answer that the step runs, or
    that the host is down."""

    def __init__(self, step: str, ask: Callable[..., Answer] = scontrol) -> None:
        self.step, self._ask = step, ask
        self._answers: dict[tuple[str, ...], tuple[float, Answer]] = {}
        self._seen: dict[str, Seen] = {}

    def _state(self, *args: str) -> str | None:
        at, answer = self._answers.get(args, (-ASK_EVERY_S, None))
        if time.monotonic() - at >= ASK_EVERY_S:
            self._answers[args] = at, answer = time.monotonic(), self._ask(*args)
        return state_of(answer)

    def seen(self, host: str) -> Seen | None:
        known = self._seen.get(host)
        if (known is None or known.grace_s) and node_down(self._state("show", "node", host)):
            self._seen[host] = Seen(time.monotonic(), f"Slurm reports {host} down", 0.0)
        elif known is None and self._state("show", "step", self.step) == "RUNNING":
            self._seen[host] = Seen(time.monotonic(), f"Slurm reporting its job step {self.step} running")
        return self._seen.get(host)

    def over(self) -> str | None:
        state = self._state("show", "step", self.step)
        return None if state in (None, "RUNNING") else f"Slurm's job step {self.step} is {state}"


def watch_of(environ: Mapping[str, str]) -> Watch:
    """Slurm's watch inside a job step where scontrol is installed, else :data:`QUIET`."""
    job, step = environ.get("SLURM_JOB_ID"), environ.get("SLURM_STEP_ID")
    return SlurmWatch(f"{job}.{step}") if job and step and shutil.which("scontrol") else QUIET
