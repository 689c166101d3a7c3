"""A run in turns' budget as pure arithmetic: what an instance costs before any has ended
(:class:`Prior`), the least a selection needs (:func:`minimum_s`), and its stages' shares."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.formulas.budget import Budget
from harness.launch.instances.turns import Plan
from harness.spec.groups import Group
from harness.spec.models import ModelRef
from harness.spec.protocol import Protocol

RACE_SHARE = 0.7
"""The share of the budget the first stage may spend before the second stage races each model's
leader against the contenders outside its race group (only where a race did not fit one group)."""

HEADLINE_SHARE = 0.85
"""The share of the budget during which a headline group with an open comparison gets its extra
instances before any other group's (:func:`harness.formulas.turns.next_group`)."""

CLOSE_S = 15.0
"""Seconds the budget keeps for the rows and the report (7 s on 2 cores), besides the closing peak."""


@dataclass(frozen=True)
class Prior:
    """What an instance costs before any has ended, on one kind of device (then the run's own:
    :meth:`harness.launch.sweep.budget.TurnsRun.estimate_s`)."""

    member_s: float
    """Seconds per member: start-up, calibration, checks, exit."""
    stretch: float
    """Wall seconds of the window turns per second of turns they ask for."""
    peak_s: float
    """Seconds of one peak process."""
    breakdown_s: float
    """Seconds of one step breakdown process (:mod:`harness.launch.instances.breakdowns`)."""
    measured: str
    """Where the figures come from."""


_CPU = (
    "the default sweep's 48 instances on a 2-core VM, 2026-11-26: a member's start-up, calibration and "
    "checks median 1.2 s, up to 2.9 s; the turns took 1.3-2.4 x as long as they ask (a faster machine "
    "needs less); a step breakdown 4.8 s median (3.0-11.9 s, 23 in 5 runs' finishing turns) plus a "
    "member's start-up"
)
_GPU = (
    "the 9 runs on an H100 and an H200, 2026-11-26 (their costs tables): start-up, calibration and exit "
    "median 3.9 s a process (1.5 to 25 s), the turns 1.00-1.12 x as long as they ask, a peak process "
    "7-14 s, a profiled step breakdown 3.9 s median (2.6-16 s, 11 finishing turns) plus a member's "
    "start-up"
)
PRIORS = {"cpu": Prior(1.5, 1.5, 5.0, 6.5, _CPU), "gpu": Prior(3.9, 1.15, 12.0, 8.0, _GPU)}
"""The prior per device kind (:attr:`harness.spec.protocol.Platform.device_kind`)."""


def asked_s(group: Group, plan: Plan) -> float:
    """Seconds of window turns an instance of ``group`` asks for: 2 per block per member."""
    return len(group.members) * 2 * plan.blocks * plan.turn_s


def prior_instance_s(group: Group, plan: Plan, prior: Prior) -> float:
    """An instance of ``group`` before any has ended, by ``prior``, seconds."""
    return len(group.members) * prior.member_s + prior.stretch * asked_s(group, plan)


def minimum_s(found: Sequence[Group], protocol: Protocol, plan: Plan, prior: Prior) -> float:
    """Seconds a run of groups ``found`` needs at least, by ``prior``: every group's minimum
    instances, the two peak processes and :data:`CLOSE_S`."""
    instances = protocol.processes * math.fsum(prior_instance_s(g, plan, prior) for g in found)
    return instances + (2 * prior.peak_s if protocol.peak else 0.0) + CLOSE_S


def check_minimum(
    found: Sequence[Group], protocol: Protocol, plan: Plan, prior: Prior, sweep: str = ""
) -> None:
    """HarnessError when the groups' minimum (:func:`minimum_s`) does not fit the budget: what it
    would take, and what would fit (``sweep``: the named sweep, which the hint keeps)."""
    need, room = minimum_s(found, protocol, plan, prior), Budget(protocol.budget_s, 0.0)
    if room.fits(need):
        return
    models = sorted({m.cell.model for g in found for m in g.members})
    mine = {model: [g for g in found if any(m.cell.model == model for m in g.members)] for model in models}
    alone = {model: minimum_s(groups, protocol, plan, prior) for model, groups in mine.items()}
    fits = [model for model, s in alone.items() if room.fits(s)]
    flag = f"--sweep {sweep} " if sweep else ""
    first = fits[0] if fits else ""
    typed = f"{first.source}:{first.function}" if isinstance(first, ModelRef) else first  # --model's
    fewer = (
        f", or one model alone ({flag}--model {typed}: about {alone[first] / 60:.1f} min)"
        if fits and len(models) > 1
        else ""
    )
    raise HarnessError(
        f"Received --budget-min {protocol.budget_min:g}; the selection's minimum ({protocol.processes} "
        f"instances of each of its {len(found)} groups, {sum(len(g.members) for g in found)} members) "
        f"takes about {need / 60:.1f} min by the estimate before any instance ({prior.member_s:g} s "
        f"a member plus the window turns, from {prior.measured}). Give --budget-min "
        f"{math.ceil(need / 60)} or more, fewer --processes, or fewer cells{fewer}."
    )
