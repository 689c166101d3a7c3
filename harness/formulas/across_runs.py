"""A ratio between runs that could not take turns: two machines, two link settings, one machine on
two days. Pure: numpy and scipy only. The model, its fit and a ratio's CI: docs/explanation/statistics.md,
"Across machines" (:func:`fit`, :class:`Sums`, :data:`CALIBRATION`, :func:`side`, :func:`ratio`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from scipy import stats as sps

from harness.formulas.stats import CONFIDENCE, NAN, Ratio, t_quantile

PROCESSES = "processes"

ONE, SEVERAL, PS = "one process", "several processes", "parameter server"
"""The kinds of configuration whose run-by-configuration term is fitted apart."""


@dataclass(frozen=True)
class RunFigure:
    """One run's figure of one configuration: ``value`` (examples/s, the run's median) and its
    per-process figures (examples/s)."""

    value: float
    processes: tuple[float, ...] = ()

    @property
    def centre(self) -> float:
        """log(value): the figure a row shows is where its CI is centred."""
        return math.log(self.value)

    @property
    def within(self) -> float:
        """var(log x_p) / P: the run's own variance of its centre (0 below 2 processes)."""
        x = np.asarray([p for p in self.processes if p > 0], dtype=float)
        return float(np.var(np.log(x), ddof=1) / x.size) if x.size >= 2 else 0.0

    @property
    def df(self) -> int:
        """Degrees of freedom of :attr:`within`: processes - 1 (0 below 2)."""
        return max(sum(p > 0 for p in self.processes) - 1, 0)


@dataclass(frozen=True)
class Sums:
    """One variance component's evidence, poolable by ``+``: ``ss`` the sum of squares, ``noise``
    the part of it the processes' own spread explains, ``df`` its degrees of freedom (all in
    squared log units)."""

    ss: float = 0.0
    noise: float = 0.0
    df: float = 0.0

    def __add__(self, other: Sums) -> Sums:
        return Sums(self.ss + other.ss, self.noise + other.noise, self.df + other.df)

    @property
    def variance(self) -> float:
        """(ss - noise) / df, at least 0; NaN with no degrees of freedom."""
        return max((self.ss - self.noise) / self.df, 0.0) if self.df > 0 else NAN


@dataclass(frozen=True)
class RunSpread:
    """The fitted run-to-run spread, as named components (:data:`SHIFT`, :func:`between` and
    :func:`within` of each kind of configuration), and where it was measured (``pairs``: run pairs
    of one machine; ``machines``; ``dates``, first and last; ``apart``, the shortest and longest
    time between paired runs, hours)."""

    parts: tuple[tuple[str, Sums], ...] = ()
    pairs: int = 0
    machines: int = 0
    dates: tuple[str, str] = ("", "")
    apart: tuple[float, float] = (0.0, 0.0)

    def __add__(self, other: RunSpread) -> RunSpread:
        parts = dict(self.parts)
        for name, x in other.parts:
            parts[name] = parts.get(name, Sums()) + x
        dates = [d for d in (*self.dates, *other.dates) if d]
        hours = [h for h in (*self.apart, *other.apart) if h]
        return RunSpread(
            tuple(sorted(parts.items())),
            self.pairs + other.pairs,
            self.machines + other.machines,
            (min(dates), max(dates)) if dates else ("", ""),
            (min(hours), max(hours)) if hours else (0.0, 0.0),
        )

    def part(self, name: str) -> Sums:
        return dict(self.parts).get(name, Sums())

    def between(self, kind: str, alpha: float = 0.05) -> Sums:
        """G for configurations of ``kind``: the kind's own where an F test says it differs from
        the other kinds' at level ``alpha``, else every kind's pooled."""
        own = self.part(between(kind))
        pooled = sum((x for name, x in self.parts if name.startswith(BETWEEN)), Sums())
        rest = Sums(pooled.ss - own.ss, pooled.noise - own.noise, pooled.df - own.df)
        if own.df > 0 and rest.df > 0 and rest.variance > 0:
            f = own.variance / rest.variance
            if 2 * min(sps.f.sf(f, own.df, rest.df), sps.f.cdf(f, own.df, rest.df)) < alpha:
                return own
        return pooled

    @property
    def words(self) -> str:
        """Where it was measured, e.g. ``13 pairs of runs of 3 machines, 2026-11-28 to 2026-12-07,
        0.2 h to 2.9 h apart``."""
        if not self.pairs:
            return "no pair of runs of one machine"
        return (
            f"{self.pairs} pair{'s' * (self.pairs != 1)} of runs of {self.machines} machine"
            f"{'s' * (self.machines != 1)}, {self.dates[0]} to {self.dates[1]}, "
            f"{self.apart[0]:.1f} h to {self.apart[1]:.1f} h apart"
        )


SHIFT = "run-wide shift"
INSTANCE = "instance to instance"
BETWEEN = "run-by-configuration: "
WITHIN = "process noise: "


def between(kind: str) -> str:
    return BETWEEN + kind


def within(kind: str) -> str:
    return WITHIN + kind


@dataclass(frozen=True)
class Run:
    """One run of a machine for :func:`fit`: when it started (ISO 8601) and configuration id ->
    (its kind, its figure)."""

    timestamp: str
    figures: Mapping[str, tuple[str, RunFigure]]


def fit(runs: Sequence[Run]) -> RunSpread:
    """The spread measured by ``runs`` of one machine (module doc); an empty :class:`RunSpread` below
    2 runs or 2 shared configurations."""
    shared = sorted(set.intersection(*(set(r.figures) for r in runs))) if len(runs) >= 2 else []
    k, n = len(runs), len(shared)
    if n < 2:
        return RunSpread()
    figs = [[r.figures[c][1] for c in shared] for r in runs]
    y = np.asarray([[f.centre for f in row] for row in figs])
    w = np.asarray([[f.within for f in row] for row in figs])
    kinds = [runs[0].figures[c][0] for c in shared]
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0) + y.mean()
    scale = (k - 1) * (n - 1) / (k * n)  # E[sum of squared residuals] of the process noise, per w
    parts = {SHIFT: Sums(float(((y.mean(axis=1) - y.mean()) ** 2).sum()), 0.0, k - 1)}
    for kind in dict.fromkeys(kinds):
        cols = [i for i, x in enumerate(kinds) if x == kind]
        ss, noise = float((resid[:, cols] ** 2).sum()), scale * float(w[:, cols].sum())
        parts[between(kind)] = Sums(ss, noise, (k - 1) * (n - 1) * len(cols) / n)
        mine = [row[i] for row in figs for i in cols if row[i].df]
        parts[within(kind)] = Sums(
            sum(f.within * (f.df + 1) * f.df for f in mine), 0.0, sum(f.df for f in mine)
        )
    stamps = sorted(r.timestamp for r in runs)
    times = [datetime.fromisoformat(s) for s in stamps]  # ISO 8601
    hours = [(b - a).total_seconds() / 3600 for i, a in enumerate(times) for b in times[i + 1 :]]
    dates = (stamps[0][:10], stamps[-1][:10])
    return RunSpread(tuple(sorted(parts.items())), k * (k - 1) // 2, 1, dates, (min(hours), max(hours)))


@dataclass(frozen=True)
class Term:
    """One part of a side's variance: ``weight`` x ``variance`` (squared log units) with ``df``."""

    name: str
    weight: float
    variance: float
    df: float


@dataclass(frozen=True)
class Side:
    """One side's evidence: its figure (examples/s: the geometric mean of its run figures, the
    median for the gate's history), its centre (mean log), its runs and the terms of its centre's
    variance."""

    value: float
    centre: float
    runs: int
    terms: tuple[Term, ...]

    @property
    def variance(self) -> float:
        return sum(t.weight * t.variance for t in self.terms)


def side(runs: Sequence[RunFigure], spread: RunSpread, kind: str, instances: int = 0) -> Side:
    """One configuration's side from its ``runs`` under ``spread`` (its ``kind``'s components):
    the shift, and the larger of the run-by-configuration term's mean square (G with the kind's
    usual process noise, as A/A pairs show it) and G plus these runs' own process noise (their
    processes' spread where every run has 2 or more, else the kind's pooled one over the runs'
    processes); with ``instances`` (the runs' host instances of a machine type), the spread's
    instance-to-instance term over them. ValueError with no run or a figure that is not > 0."""
    if not runs or any(not r.value > 0 for r in runs):
        raise ValueError(f"a side needs run figures > 0; received {[r.value for r in runs]}")
    k = len(runs)
    shift, g, pooled = spread.part(SHIFT), spread.between(kind), spread.part(within(kind))
    if all(r.df for r in runs):
        own = Term(PROCESSES, 1 / k, float(np.mean([r.within for r in runs])), sum(r.df for r in runs))
    else:  # var(log x_p) pooled over the kind's processes, / P a run
        per = float(np.mean([1 / max(r.df + 1, 1) for r in runs]))
        own = Term(within(kind), per / k, pooled.variance, pooled.df)
    mine = (Term(between(kind), 1 / k, g.variance, g.df), own)
    lumped = Term(between(kind), 1 / k, g.ss / g.df if g.df else NAN, g.df)  # G + the kind's usual noise
    terms = mine if sum(t.weight * t.variance for t in mine) > lumped.weight * lumped.variance else (lumped,)
    inst = spread.part(INSTANCE)
    if instances and inst.df:
        terms = (*terms, Term(INSTANCE, 1 / instances, inst.variance, inst.df))
    centre = float(np.mean([r.centre for r in runs]))  # its figure: the runs' geometric mean
    return Side(math.exp(centre), centre, k, (Term(SHIFT, 1 / k, shift.variance, shift.df), *terms))


def interval(s: Side, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The side's figure and its CI, exp(centre +- t sqrt(variance)), examples/s."""
    half = _half((s,), confidence)
    return s.value, math.exp(s.centre - half), math.exp(s.centre + half)


def ratio(a: Side, b: Side, confidence: float = CONFIDENCE) -> Ratio:
    """a / b of two sides' figures, CI exp((c_a - c_b) +- t sqrt(v_a + v_b)); a component both
    sides share (the fitted shift and terms) counts once in the degrees of freedom."""
    if not (a.value > 0 and b.value > 0):
        return Ratio(NAN, NAN, NAN, a.runs, b.runs)
    half = _half((a, b), confidence)
    diff = a.centre - b.centre
    return Ratio(a.value / b.value, math.exp(diff - half), math.exp(diff + half), a.runs, b.runs)


def combined(*sides: Side) -> tuple[Term, ...]:
    """The terms of a - b (of one side: its own): the fitted components (same name and estimate)
    with their weights added, each side's processes apart."""
    out: dict[tuple[str, float, float], float] = {}
    for i, s in enumerate(sides):
        for t in s.terms:
            key = (t.name + (f" {i}" if t.name == PROCESSES else ""), t.variance, t.df)
            out[key] = out.get(key, 0.0) + t.weight
    return tuple(Term(name, w, v, df) for (name, v, df), w in out.items())


def _half(sides: Sequence[Side], confidence: float) -> float:
    """t sqrt(v) of one side's centre or of two sides' difference, v their variances summed."""
    return t_quantile(_df(combined(*sides)), confidence) * math.sqrt(sum(s.variance for s in sides))


def _df(terms: Sequence[Term]) -> float:
    """Welch-Satterthwaite: (sum w v)^2 / sum (w v)^2 / df; inf where every term's df is."""
    parts = [(t.weight * t.variance, t.df) for t in terms if t.weight * t.variance > 0]
    finite = [(x, df) for x, df in parts if math.isfinite(df)]
    if not finite:
        return math.inf
    return sum(x for x, _ in parts) ** 2 / sum(x**2 / df for x, df in finite)


def decide_runs(a: Side, b: Side, band: float, confidence: float = CONFIDENCE) -> int | None:
    """Runs a side likely to decide a ratio of these sides at ``band`` = log(1 + min_effect): the k
    at which t sqrt(v(k)) falls below |d| (d the log ratio, outside the band) or below band - |d|
    (inside it); None when no k up to :data:`MAX_RUNS` does."""
    d = abs(a.centre - b.centre)
    target = d if d >= band else band - d
    for k in range(max(a.runs, b.runs) + 1, MAX_RUNS + 1):
        if _half((like_k(a, k), like_k(b, k)), confidence) < target:
            return k
    return None


def like_k(s: Side, k: int) -> Side:
    """``s`` as if it had ``k`` runs of the same spread."""
    terms = tuple(Term(t.name, 1 / k, t.variance, t.df) for t in s.terms)
    return Side(s.value, s.centre, k, terms)


MAX_RUNS = 10
"""Runs a side beyond which a difference is called below what runs of these machines tell apart."""


def pooled(calibration: RunSpread, runs_by_machine: Sequence[Sequence[Run]]) -> RunSpread:
    """The calibration set's spread with the runs at hand added (machines with 2 or more runs)."""
    return sum((fit(runs) for runs in runs_by_machine if len(runs) >= 2), calibration)


CALIBRATION = RunSpread(
    (
        ("process noise: one process", Sums(4.95799, 0, 644)),
        ("process noise: parameter server", Sums(0.549142, 0, 50)),
        ("process noise: several processes", Sums(0.757671, 0, 170)),
        ("run-by-configuration: one process", Sums(0.277955, 0.352414, 139.765)),
        ("run-by-configuration: parameter server", Sums(0.131194, 0.127663, 23.2941)),
        ("run-by-configuration: several processes", Sums(0.051885, 0.041522, 34.9412)),
        ("run-wide shift", Sums(0.0042843, 0, 6)),
    ),
    13,
    2,
    ("2026-11-28", "2026-12-07"),
    (0.211, 2.81),
)
"""The project's calibration set (benchmarks/run-spread/, its README says how each run was made):
A/A runs of one machine, fitted by :func:`fit` and written by ``python -m benchmarks.run_spread``;
benchmarks/test_run_spread.py checks it against the set. :attr:`RunSpread.words` gives its provenance."""
