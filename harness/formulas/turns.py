"""Ratios measured in turns: a group's live processes take turns, and instances are the evidence.

A *group*'s members (string keys) have their processes live at once. In each *block* every member
runs one timed window twice, in a balanced order (ABBA for two members; for more, a permutation
drawn per block, then its reverse), so a drift linear over the block adds the same to every
member's seconds. An *instance*, one fresh set of the group's processes running B blocks, is the
unit of evidence (docs/explanation/statistics.md). Pure; numpy and scipy.stats only.

The formulas (:func:`block_log_ratios`, :func:`instance_log_ratio`, ratio, CI, p-value, instances
to decide) are results/README.md's ("Ratios in turns"); with n instances, ybar = mean(y_i) and
s_B = sd(y_i) (ddof 1, ``sd_between``), beyond them:

- p-value: with s_B = 0 it is 0 when ybar != 0 and 1 when ybar = 0 (the zero-width CI's verdict);
  the CI and p-value are NaN with n < 2.
- sd_within         = sqrt( sum_i sum_b (l_ib - mean_b l_ib)^2 / sum_i (B_i - 1) ), the pooled
  sd of block log ratios inside instances (NaN with no instance of 2 blocks or more). Since
  s_B^2 estimates sigma_process^2 + sd_within^2 / B, comparing s_B with sd_within / sqrt(B) says
  whether more blocks per instance (only the second term) or more instances would narrow the CI.
- FDR (:mod:`harness.formulas.verdicts`, on the unscaled ratio): Benjamini-Hochberg at rate q over
  the finite p-values of a run (scipy.stats.false_discovery_control's adjusted p-value <= q; NaN
  p-values are neither rejected nor counted), and it must be distinguishable (h = t * s_B /
  sqrt(n) < |ybar|, |log r| >= L = log(1 + m), m: ``MIN_EFFECT``); one it does not reject is
  undecided (never equivalent).
- instances to decide: n = the smallest n >= max(current, 2) with t(conf, n-1) * s_B / sqrt(n) <=
  d, searched upwards from the normal approximation ceil((z * s_B / d)^2), which never exceeds it.
  Unknown (None) with fewer than 2 instances, or d = 0 (min_effect 0 and ybar exactly 0: no
  finite n decides). The projection assumes ybar and s_B stay where they are, so near |ybar| = L
  it is only a guide."""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from harness.formulas.stats import CONFIDENCE, MIN_EFFECT, NAN, log_t_half_width, log_t_interval, t_quantile
from harness.formulas.verdicts import DECIDED, NOT_MEASURED, UNDECIDED, judge


@dataclass(frozen=True)
class Turn:
    """One timed window of one member in block ``block`` of an instance: ``seconds`` of wall time
    in which ``examples`` examples were trained (global: all replicas, workers and
    micro-batches)."""

    block: int
    member: str
    seconds: float
    examples: float
    other_cpu_s: float = 0.0
    """CPU seconds the host spent during the turn on anything but the member and the run's other
    processes: kernel threads, interrupts, other programs, the hypervisor's steal, tick-sampling
    noise (:mod:`harness.launch.system.cpu_use`). Older journals counted the run's
    other processes here too (their ``run_cpu_s`` is 0 and ``foreign_cpu_s`` NaN)."""
    run_cpu_s: float = 0.0
    """CPU seconds the run's other processes used during the turn: the parent, its fork servers,
    the waiting members and co-tenants."""
    idle_cpus: float = math.nan
    """CPUs the host left idle during the turn, on average (NaN: unknown)."""
    busiest: str = ""
    """The program outside the run (or "steal") that used the most CPU in the turn, ``name[pid]``
    ("" none)."""
    busiest_cpu_s: float = 0.0
    """Its CPU seconds in the turn."""
    foreign_cpu_s: float = math.nan
    """CPU seconds of user-space programs outside the run plus the hypervisor's steal during the
    turn: the part of ``other_cpu_s`` that is somebody else's work (NaN: not recorded)."""
    span_s: float = math.nan
    """Wall seconds over which the coordinator measured the turn's CPU (the window and its grant's
    round trip; NaN: not recorded, ``seconds`` is used)."""

    def rate(self, cpu_s: float) -> float:
        """CPU seconds as CPUs' worth over the turn's measured span (or its window's seconds)."""
        span = self.seconds if math.isnan(self.span_s) else self.span_s
        return cpu_s / span if span > 0 else 0.0

    @property
    def disturbance(self) -> float:
        """CPUs' worth (1.0: one whole CPU, averaged over the turn) that another program or the
        hypervisor used: ``foreign_cpu_s``, or where it was not recorded ``other_cpu_s``."""
        return self.rate(self.other_cpu_s if math.isnan(self.foreign_cpu_s) else self.foreign_cpu_s)

    @property
    def besides(self) -> float:
        """CPUs' worth used by anything but the member (the run's other processes, the kernel,
        other programs, steal): ``run_cpu_s + other_cpu_s`` over the turn."""
        return self.rate(self.run_cpu_s + self.other_cpu_s)


DISTURBED = 0.25
"""A turn is disturbed when another program (or the hypervisor) used more than this many CPUs'
worth of time during it (a quarter of one CPU): the member did not have the machine. Measured on
the 2-core VM (cnn mirrored on 1 and 2 replicas, 12 blocks, 2026-11-25): the 40 turns before a
busy process started saw 0.00-0.10 CPUs besides the member; the turns beside it 0.66-1.01."""

SPARE_CPUS = 1.0
"""Whatever else used CPU in a turn (the run's own waiting processes, the kernel working for the
run: writeback of its files, memory management, interrupts) counts against the turn only when the
host left fewer CPUs than this idle: then it took CPU the member could have used. On a 16-core
GPU host (13-15 idle in a turn) it took nothing from it; on the 2-core VM (about 0 idle while a
member trains) it did."""


def foreign_limit(idle_cpus: float, limit: float = DISTURBED) -> float:
    """CPUs' worth another program may use in a turn without disturbing it: ``limit`` scaled by
    the CPUs the host left idle in the turn (at least ``limit``; NaN idle: ``limit``). On the 2-core
    VM (about 0 idle while a member trains) a quarter of a CPU; on a 16-core GPU host with 14 idle,
    3.5: the H200's 3 dropped blocks of 2026-11-26 had 0.26-0.32 CPUs of other programs with 14
    CPUs idle, which took nothing from the member."""
    return limit if math.isnan(idle_cpus) else limit * max(1.0, idle_cpus)


def by_other_program(turn: Turn, limit: float = DISTURBED) -> bool:
    """Whether another program or the hypervisor used more than :func:`foreign_limit` CPUs
    during ``turn`` (:attr:`Turn.disturbance`)."""
    return turn.disturbance > foreign_limit(turn.idle_cpus, limit)


def is_disturbed(turn: Turn, limit: float = DISTURBED, spare: float = SPARE_CPUS) -> bool:
    """Whether something took CPU the member needed during ``turn``: another program did
    (:func:`by_other_program`), or anything besides the member did (:attr:`Turn.besides`) more
    than ``limit`` while fewer than ``spare`` CPUs were idle (NaN idle, a journal from before the
    split: unknown, not short)."""
    return by_other_program(turn, limit) or (turn.besides > limit and turn.idle_cpus < spare)


def clean(turns: Sequence[Turn], limit: float = DISTURBED) -> list[Turn]:
    """The turns of the blocks in which no turn was disturbed (:func:`is_disturbed`): a block is
    compared whole or not at all, since its balanced order is what cancels a drift."""
    bad = {t.block for t in turns if is_disturbed(t, limit)}
    return [t for t in turns if t.block not in bad]


def disturbed_blocks(turns: Sequence[Turn], limit: float = DISTURBED) -> int:
    """How many blocks :func:`clean` drops."""
    return len({t.block for t in turns if is_disturbed(t, limit)})


def busiest_other(turns: Sequence[Turn], limit: float = DISTURBED) -> tuple[str, float]:
    """The program outside the run (or "steal") that used the most CPU over the turns another
    program disturbed, as ``name[pid]`` (its processes summed by name, the pid of the one that
    used the most in a turn), and its CPUs' worth over those turns' seconds (("", 0.0) when none
    is named): what to stop for a quiet run."""
    hit = [t for t in turns if by_other_program(t, limit)]
    seconds = math.fsum(t.seconds for t in hit)
    used: dict[str, float] = {}
    largest: dict[str, Turn] = {}
    for t in (t for t in hit if t.busiest):
        name = t.busiest.split("[", 1)[0]
        used[name] = used.get(name, 0.0) + t.busiest_cpu_s
        largest[name] = max(largest.get(name, t), t, key=lambda x: x.busiest_cpu_s)
    if not used or seconds <= 0:
        return "", 0.0
    top = max(used, key=used.__getitem__)
    return largest[top].busiest, used[top] / seconds


def crowded_besides(turns: Sequence[Turn], limit: float = DISTURBED) -> float:
    """The median CPUs' worth used besides the member over the turns disturbed for want of a spare
    CPU (not by another program); NaN when there are none."""
    return _median([t.besides for t in turns if is_disturbed(t, limit) and not by_other_program(t, limit)])


def _median(values: Sequence[float]) -> float:
    return float(np.median(values)) if values else NAN


def _side(turns: Sequence[Turn], member: str, block: int) -> float:
    """Examples per second of ``member`` over its turns in ``block``: examples / seconds, summed."""
    examples = math.fsum(t.examples for t in turns)
    seconds = math.fsum(t.seconds for t in turns)
    if not (math.isfinite(examples) and math.isfinite(seconds) and examples > 0 and seconds > 0):
        raise ValueError(
            f"member {member!r} in block {block}: {examples} examples in {seconds} s; expected both "
            "finite and > 0 for a log ratio"
        )
    return examples / seconds


def block_log_ratios(turns: Sequence[Turn], subject: str, reference: str) -> list[float]:
    """Per block, in block order: log(subject's examples/s / reference's examples/s), each side's
    examples/s over the block being its examples summed over its seconds summed (with equal work,
    the ABBA estimate log((t_R1 + t_R2) / (t_S1 + t_S2))). Dimensionless. Blocks missing either
    side are skipped. Raises ValueError when subject == reference or a side's examples or seconds
    sum to a value that is not finite and > 0."""
    if subject == reference:
        raise ValueError(f"subject and reference are both {subject!r}; a ratio needs two members")
    by_block: dict[int, dict[str, list[Turn]]] = {}
    for t in turns:
        if t.member in (subject, reference):
            by_block.setdefault(t.block, {}).setdefault(t.member, []).append(t)
    logs: list[float] = []
    for block in sorted(by_block):
        sides = by_block[block]
        if subject in sides and reference in sides:
            s = _side(sides[subject], subject, block)
            r = _side(sides[reference], reference, block)
            logs.append(math.log(s / r))
    return logs


def instance_log_ratio(turns: Sequence[Turn], subject: str, reference: str) -> float:
    """The instance's log ratio subject / reference: the mean of :func:`block_log_ratios`
    (dimensionless); NaN when no block has both sides."""
    logs = block_log_ratios(turns, subject, reference)
    return math.fsum(logs) / len(logs) if logs else NAN


def _finite(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if math.isfinite(v)]


def _pooled_sd(within: Sequence[Sequence[float]]) -> float:
    squares = 0.0
    dof = 0
    for block_logs in within:
        x = np.asarray(_finite(block_logs), dtype=np.float64)
        if x.size >= 2:
            squares += float(np.sum((x - np.mean(x)) ** 2))
            dof += int(x.size) - 1
    return math.sqrt(squares / dof) if dof else NAN


@dataclass(frozen=True)
class TurnRatio:
    """A ratio subject / reference over ``instances`` instances, times ``scale`` (see the module
    doc): ``value`` exp(mean instance log ratio) * scale, CI [``low``, ``high``] (NaN below 2
    instances), ``sd_between`` the sd of the instance log ratios and ``sd_within`` the pooled sd
    of block log ratios inside instances (both on the log scale, so about relative; NaN when
    unknown), ``p_value`` of the two-sided t-test of no difference (NaN below 2 instances).
    ``scale`` is the value at no difference: verdicts judge value / scale against 1."""

    value: float
    low: float
    high: float
    instances: int
    sd_between: float
    sd_within: float
    p_value: float
    scale: float = 1.0

    def verdict(self, min_effect: float = MIN_EFFECT, significant: bool = True) -> str:
        """Higher, lower (the unscaled ratio against 1), equivalent or undecided
        (:func:`harness.formulas.verdicts.judge`); ``significant``: whether the false-discovery
        control lets a difference stand."""
        if not (math.isfinite(self.scale) and self.scale > 0):
            return UNDECIDED
        value, low, high = (v / self.scale for v in (self.value, self.low, self.high))
        return judge(value, low, high, min_effect, significant)

    def decided(self, min_effect: float = MIN_EFFECT) -> bool:
        """True when distinguishable, or when the unscaled CI lies wholly within
        [1 / (1 + min_effect), 1 + min_effect] (no difference of min_effect or more): no more
        instances are needed for a verdict on this comparison alone."""
        return self.verdict(min_effect) in DECIDED


def _p_value(logs: Sequence[float]) -> float:
    """The two-sided one-sample t-test of mean 0 (scipy.stats.ttest_1samp: about 0.4 ms a call on the
    2-core VM, five times the formula by hand, run between instances and for the ratios table, never
    during a turn); without spread, where scipy's t is 0 / 0 or warns of precision loss, exactly 1 at
    mean 0 and 0 elsewhere."""
    if len(logs) < 2:
        return NAN
    if min(logs) == max(logs):
        return 1.0 if logs[0] == 0 else 0.0
    with warnings.catch_warnings():  # nearly equal logs: scipy warns of precision loss; p is ~0
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(sps.ttest_1samp(logs, 0.0).pvalue)


def turn_ratio(
    instance_logs: Sequence[float],
    within: Sequence[Sequence[float]] = (),
    scale: float = 1.0,
    confidence: float = CONFIDENCE,
) -> TurnRatio:
    """The ratio over instances (see the module doc) from each instance's log ratio
    (:func:`instance_log_ratio`; non-finite ones, instances without a complete block, are
    dropped). ``within``: each instance's block log ratios (:func:`block_log_ratios`), for
    ``sd_within`` only. ``scale`` (> 0) multiplies the value and both ends of the CI."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale={scale}; expected a finite value > 0")
    logs = _finite(instance_logs)
    n = len(logs)
    value, low, high = log_t_interval(logs, confidence)
    return TurnRatio(
        value=value * scale,
        low=low * scale,
        high=high * scale,
        instances=n,
        sd_between=float(np.std(logs, ddof=1)) if n >= 2 else NAN,
        sd_within=_pooled_sd(within),
        p_value=_p_value(logs),
        scale=scale,
    )


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses (in the order given) the Benjamini-Hochberg step-up procedure rejects at
    false discovery rate ``q``: those whose adjusted p-value (scipy.stats.false_discovery_control)
    is at most ``q``. NaN p-values (no CI) are never rejected and not counted in m'.
    Raises ValueError for q outside (0, 1] or a finite p-value outside [0, 1]."""
    if not 0 < q <= 1:
        raise ValueError(f"q={q}; expected a false discovery rate in (0, 1]")
    p = np.asarray(p_values, dtype=np.float64)
    finite = np.isfinite(p)
    rejected = np.zeros(p.size, dtype=bool)
    if finite.any():
        rejected[finite] = sps.false_discovery_control(p[finite]) <= q
    return [bool(r) for r in rejected]


def fdr_verdicts(ratios: Sequence[TurnRatio], min_effect: float = MIN_EFFECT, q: float = 0.05) -> list[str]:
    """Each ratio's verdict with the false discovery rate across them held at ``q`` (the module
    doc's FDR; :mod:`harness.formulas.verdicts`); "not measured" with no instance."""
    rejected = benjamini_hochberg([r.p_value for r in ratios], q)
    return [
        NOT_MEASURED if r.instances == 0 else r.verdict(min_effect, significant=hit)
        for r, hit in zip(ratios, rejected, strict=True)
    ]


def instances_to_decide(
    instance_logs: Sequence[float], min_effect: float = MIN_EFFECT, confidence: float = CONFIDENCE
) -> int | None:
    """Total instances (counting those measured) likely needed before the ratio is decided
    (:meth:`TurnRatio.decided`) if its mean and spread stay as measured (see the module doc);
    at least the current count (non-finite logs dropped). None with fewer than 2 instances (no
    spread), when no count decides (d = 0) or when the count is too large to represent."""
    logs = _finite(instance_logs)
    n_now = len(logs)
    if n_now < 2:
        return None
    mean = abs(float(np.mean(logs)))
    sd = float(np.std(logs, ddof=1))
    band = math.log1p(min_effect)
    d = mean if mean >= band else band - mean
    if d <= 0:
        return None
    if sd == 0:
        return n_now
    z = float(sps.norm.ppf((1 + confidence) / 2))
    guess = (z * sd / d) ** 2
    return _instances_for(sd, d, max(n_now, 2, math.ceil(guess)), confidence) if guess < 2**53 else None


def _instances_for(sd: float, half: float, n: int, confidence: float, most: float = math.inf) -> int:
    """The fewest instances from ``n`` (up to ``most``) whose CI half-width on the log scale,
    t(n - 1) sd / sqrt(n), is at most ``half`` at the spread ``sd``."""
    while n < most and t_quantile(n - 1, confidence) * sd / math.sqrt(n) > half:
        n += 1
    return n


@dataclass(frozen=True)
class GroupState:
    """Where one group stands: ``instances`` measured so far, ``seconds_per_instance`` (mean wall
    seconds of one instance, start-up to exit), per comparison of the group its instance log
    ratios so far, and ``targets``: per comparison (parallel to ``comparisons``; empty: none) its
    precision target, the widest CI it may keep as a fraction of its value ((high - low) / value,
    :func:`relative_width`), or None."""

    name: str
    instances: int
    seconds_per_instance: float
    comparisons: tuple[tuple[float, ...], ...]
    targets: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if self.targets and len(self.targets) != len(self.comparisons):
            raise ValueError(
                f"group {self.name!r}: {len(self.targets)} targets for {len(self.comparisons)} "
                "comparisons; expected one per comparison, or none"
            )


def relative_width(logs: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """The CI's width as a fraction of the ratio's value, (high - low) / value = 2 sinh(h), h the
    half-width on the log scale (any ``scale`` cancels); +inf below 2 finite instance log ratios."""
    return 2 * math.sinh(log_t_half_width(_finite(logs), confidence))


def _open(state: GroupState, min_effect: float, confidence: float) -> list[tuple[float, ...]]:
    """The comparisons that want instances: undecided, or wider than their precision target."""
    targets = state.targets or (None,) * len(state.comparisons)
    return [
        logs
        for logs, target in zip(state.comparisons, targets, strict=True)
        if not turn_ratio(logs, confidence=confidence).decided(min_effect)
        or (target is not None and relative_width(logs, confidence) > target)
    ]


def _decidable(state: GroupState, max_instances: int | None, min_effect: float, confidence: float) -> bool:
    """Whether an open comparison of the group would likely be decided or narrowed to its target
    within the group's instances left up to ``max_instances`` (any number when None)."""
    left = math.inf if max_instances is None else max_instances - state.instances
    targets = state.targets or (None,) * len(state.comparisons)
    for logs, target in zip(state.comparisons, targets, strict=True):
        have = len(_finite(logs))
        if not turn_ratio(logs, confidence=confidence).decided(min_effect):
            needed = instances_to_decide(logs, min_effect, confidence)
            if needed is not None and max(needed - have, 1) <= left:
                return True
        needed = instances_to_narrow(logs, target, confidence) if target is not None else None
        if needed is not None and max(needed - have, 0) <= left and needed > have:
            return True
    return False


MAX_NARROW = 1000
"""The most instances :func:`instances_to_narrow` counts to (past any budget)."""


def instances_to_narrow(logs: Sequence[float], target: float, confidence: float = CONFIDENCE) -> int | None:
    """Instances that would likely bring the CI's :func:`relative_width` to ``target`` at the spread
    measured so far (the half-width shrinks as t / sqrt(n)); None below 2 finite instances."""
    finite = _finite(logs)
    if len(finite) < 2:
        return None
    sd = float(np.std(finite, ddof=1))
    return _instances_for(sd, math.asinh(target / 2), len(finite), confidence, MAX_NARROW)


def next_group(
    states: Sequence[GroupState],
    min_instances: int = 3,
    max_instances: int | None = None,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    first: Collection[int] = (),
    first_while_open: bool = True,
) -> int | None:
    """Index (into ``states``) of the group that gets the next instance.

    A group below ``min_instances`` first: one of ``first`` (the headline) before any other, then
    the one with fewest, ties in order. Past the minimum, among the groups below ``max_instances``
    with an open comparison (:func:`_open`: undecided, or its CI's :func:`relative_width` above its
    target; below 2 instances a CI is infinitely wide): one of ``first`` whose open comparison more
    instances would likely settle within ``max_instances`` (:func:`_decidable`); else, with
    ``first_while_open``, any of ``first``; else any. Among those, the one whose widest open
    comparison has the largest CI half-width (ties: fewer instances, then order). None when no
    comparison is open or every group that could take one is at ``max_instances``, which no group
    exceeds."""
    if min_instances < 0:
        raise ValueError(f"min_instances={min_instances}; expected >= 0")
    if max_instances is not None and max_instances < 1:
        raise ValueError(f"max_instances={max_instances}; expected >= 1 or None (no cap)")
    below = [i for i, s in enumerate(states) if max_instances is None or s.instances < max_instances]
    short = [i for i in below if states[i].instances < min_instances]
    if short:
        return min(short, key=lambda i: (i not in first, states[i].instances, i))
    wanting = {i: found for i in below if (found := _open(states[i], min_effect, confidence))}
    heads = [i for i in wanting if i in first]
    decidable = [i for i in heads if _decidable(states[i], max_instances, min_effect, confidence)]
    pool = decidable or (heads if first_while_open else []) or list(wanting)
    widest = {i: max(log_t_half_width(_finite(logs), confidence) for logs in wanting[i]) for i in pool}
    return max(pool, key=lambda i: (widest[i], -states[i].instances, -i)) if pool else None


@dataclass(frozen=True)
class TurnsSummary:
    """Instances' turns as the disturbance rule sees them: blocks in all, blocks kept
    (:func:`clean`), and the median CPUs' worth per turn of other programs (:attr:`Turn.disturbance`), of everything besides the member, and of the run's other
    processes."""

    blocks: int
    kept: int
    median_foreign: float
    median_besides: float
    median_run: float


def summarize(instances: Sequence[Sequence[Turn]], limit: float = DISTURBED) -> TurnsSummary:
    """:class:`TurnsSummary` of ``instances``, each a sequence of its turns."""
    blocks = kept = 0
    for turns in instances:
        ids = {t.block for t in turns}
        blocks += len(ids)
        kept += len(ids) - disturbed_blocks(turns, limit)
    flat = [t for turns in instances for t in turns]
    return TurnsSummary(
        blocks,
        kept,
        _median([t.disturbance for t in flat]),
        _median([t.besides for t in flat]),
        _median([t.rate(t.run_cpu_s) for t in flat]),
    )
