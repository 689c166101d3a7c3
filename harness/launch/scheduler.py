"""What a real cluster's scheduler says about its tasks: since when a task is known to run (its job
step running, or its node down), so that the chief gives a task that never joins its run lease
:data:`JOIN_BOUND_S` from then rather than a fixed wait; and, to a task still
trying to join, whether its job step is over. Slurm only (``scontrol``); other schedulers say
nothing (:data:`QUIET`). Pure but for :func:`scontrol`."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

JOIN_BOUND_S = 30.0
"""Seconds the chief waits for a task to join once the scheduler reports it running (or its node
down): then it is lost."""
ASK_EVERY_S = 2.0
"""Seconds between two questions to the scheduler about the same thing."""
SCONTROL_TIMEOUT_S = 5.0
UNREACHABLE = ("Unable to contact", "Socket timed out", "connect failure", "Connection refused")
"""scontrol's words when it cannot reach slurmctld (this node's link is down): nothing is known."""


@dataclass(frozen=True)
class Seen:
    """The scheduler reported a task running, or its node down: since when (monotonic s), in words."""

    since: float
    what: str


def join_overdue(
    now: float, started: float, seen: Seen | None, timeout_s: float, bound_s: float = JOIN_BOUND_S
) -> str | None:
    """Why a task that has not joined is lost at ``now`` (monotonic s; the chief waits from
    ``started``): ``bound_s`` past what the scheduler reported, or ``timeout_s`` past ``started``
    when it reported nothing (a task not yet running is a slow start, not a loss); None: wait on."""
    if seen is not None and now - seen.since > bound_s:
        return f"it never joined the chief's run lease within {bound_s:g} s of {seen.what}"
    if now - started > timeout_s:
        return f"it never joined the chief's run lease within {timeout_s:g} s"
    return None


def fields(text: str) -> dict[str, str]:
    """scontrol's ``Key=Value`` words as a mapping (the first of a repeated key)."""
    found: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep:
            found.setdefault(key, value)
    return found


def node_down(state: str) -> bool:
    """Whether a node's scontrol ``State`` (``IDLE``, ``DOWN*``, ``MIXED+DRAIN``...) says it is lost."""
    return state.endswith("*") or any(w in state for w in ("DOWN", "FAIL", "NOT_RESPONDING"))


def step_words(answer: tuple[int, str] | None) -> str | None:
    """What ``scontrol show step`` answered: ``RUNNING``, another state, ``gone`` (an error other
    than an unreachable controller), or None (nothing known)."""
    if answer is None:
        return None
    code, text = answer
    if code != 0:
        return None if any(w in text for w in UNREACHABLE) else "gone"
    return fields(text).get("State", "gone")


def scontrol(*args: str) -> tuple[int, str] | None:
    """scontrol's exit code and output (None: it did not answer in time)."""
    try:
        done = subprocess.run(
            ["scontrol", *args], capture_output=True, text=True, timeout=SCONTROL_TIMEOUT_S, check=False
        )
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
    """This Slurm job step (``JOB.STEP``) and its nodes, asked through ``ask`` (:func:`scontrol`) at
    most every :data:`ASK_EVERY_S` per question; a task is seen from the first answer that its step
    runs, or that its node is down."""

    def __init__(self, step: str, ask: Callable[..., tuple[int, str] | None] = scontrol) -> None:
        self.step, self._ask = step, ask
        self._answers: dict[tuple[str, ...], tuple[float, tuple[int, str] | None]] = {}
        self._seen: dict[str, Seen] = {}

    def _answer(self, *args: str) -> tuple[int, str] | None:
        at, answer = self._answers.get(args, (-ASK_EVERY_S, None))
        if time.monotonic() - at >= ASK_EVERY_S:
            at, answer = time.monotonic(), self._ask(*args)
            self._answers[args] = (at, answer)
        return answer

    def seen(self, host: str) -> Seen | None:
        if host not in self._seen:
            node = self._answer("show", "node", host)
            if node is not None and node[0] == 0 and node_down(fields(node[1]).get("State", "")):
                self._seen[host] = Seen(time.monotonic(), f"Slurm reporting {host} down")
            elif step_words(self._answer("show", "step", self.step)) == "RUNNING":
                self._seen[host] = Seen(time.monotonic(), f"Slurm reporting its job step {self.step} running")
        return self._seen.get(host)

    def over(self) -> str | None:
        state = step_words(self._answer("show", "step", self.step))
        return None if state in (None, "RUNNING") else f"Slurm's job step {self.step} is {state}"


def watch_of(environ: Mapping[str, str]) -> Watch:
    """The scheduler of this process: Slurm inside a job step where scontrol is installed, else
    :data:`QUIET`."""
    step = [environ.get(v) for v in ("SLURM_JOB_ID", "SLURM_STEP_ID")]
    if all(step) and shutil.which("scontrol"):
        return SlurmWatch(".".join(s for s in step if s))
    return QUIET
