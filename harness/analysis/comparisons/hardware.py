"""``compare-hardware``: which machine trains each model fastest, and for how much
(docs/how-to/hardware.md). Pure (typed rows in, a :class:`HardwareComparison` out;
:mod:`harness.analysis.comparisons.hardware_text` says it). Machines are :mod:`harness.analysis.comparisons.machines`'s;
each machine's fastest configuration as its newest run decided it in turns, its CI over runs from
:mod:`harness.formulas.across_runs`, ``min_effect`` 10% by default; :class:`NoBf16` machines;
:attr:`HardwareComparison.rows`: every configuration both measured."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.comparisons import across
from harness.analysis.comparisons.across import MIN_EFFECT, Versus
from harness.analysis.comparisons.machines import MachineRuns, find, peak_of
from harness.analysis.run.answer import answers, labels
from harness.contract.columns import Estimate
from harness.contract.records import Axes, CellRow, RatioRow, Status
from harness.errors import HarnessError
from harness.formulas.across_runs import CALIBRATION, RunSpread, Side
from harness.formulas.stats import Ratio
from harness.formulas.verdicts import judge
from harness.spec.models import MODELS
from harness.spec.strategies import STRATEGIES


@dataclass(frozen=True)
class Figure:
    """One machine's throughput of one configuration over its runs (examples/s, 95% CI with the
    run-to-run spread), its energy per example where measured (J), and what its CI rests on."""

    machine: str
    cell: Axes
    label: str
    side: Side
    energy_j_per_example: float | None

    @property
    def estimate(self) -> Estimate:
        return across.estimate(self.side)


@dataclass(frozen=True)
class Cost:
    """A machine's cost at its best: USD per million examples and per epoch (95% CI from the
    throughput's), at ``usd_per_hour`` per instance-hour."""

    usd_per_hour: float
    per_million: Estimate
    per_epoch: Estimate | None
    """None: the model's data set has no fixed size."""


@dataclass(frozen=True)
class NoBf16:
    """A CPU machine whose runs trained the model but never in mixed bfloat16 (no ok row), although
    its CPU has bfloat16 units or its runs do not say: its best may be higher than shown."""

    machine: str
    units: tuple[str, ...] | None
    """Its CPU flags that show bfloat16 units (:attr:`MachineFacts.bf16_units`); None: its runs are
    from before the suite recorded its machine facts."""
    trained: tuple[str, ...]
    """The precisions its runs trained the model in (float32, mixed_float16)."""


@dataclass(frozen=True)
class ModelAnswer:
    """One model across the machines."""

    model: str
    title: str
    best: dict[str, Figure]
    """MachineRuns -> its fastest configuration's figure (machines whose runs raced the model)."""
    unraced: tuple[str, ...]
    """Machines whose runs measured the model but raced no configurations of it in turns."""
    at_best: tuple[Versus, ...]
    same_label: str
    """The configuration compared on every machine, in words ("" where none is shared)."""
    same_plain: bool
    same: tuple[Versus, ...]
    costs: dict[str, Cost]
    epoch_examples: int
    leader: str = ""
    """The machine with the highest figure at its best ("" with fewer than two)."""
    leads: tuple[Versus, ...] = ()
    """The leader at its best against each other machine at its best."""
    no_bf16: tuple[NoBf16, ...] = ()


@dataclass(frozen=True)
class Row:
    """One configuration on one machine, against the reference machine's figure of it."""

    model: str
    label: str
    cell_id: str
    figure: Figure
    versus: Versus | None
    """None on the reference machine."""


@dataclass(frozen=True)
class HardwareComparison:
    machines: tuple[MachineRuns, ...]
    baseline: str
    min_effect: float
    models: tuple[ModelAnswer, ...]
    rows: tuple[Row, ...]
    prices: dict[str, float]
    peaks: tuple[Versus, ...]
    """Each machine's measured peak in :attr:`peak_dtype` against the reference's (CI from the two
    peaks' CIs)."""
    peak_dtype: str
    """The compute dtype whose peaks are compared: float32 where every machine measured it, else
    the first other one every machine measured ("" where none)."""
    spread: RunSpread
    """The run-to-run spread every CI carries: the calibration set's with the machines' own runs."""


def compare(
    machines: Sequence[MachineRuns],
    rows: Sequence[CellRow],
    ratios: Sequence[RatioRow],
    baseline: str | None = None,
    min_effect: float = MIN_EFFECT,
    prices: Mapping[str, float] | None = None,
    calibration: RunSpread = CALIBRATION,
) -> HardwareComparison:
    """The comparison of ``machines`` (two or more) on ``rows`` and ``ratios`` of their runs."""
    if len(machines) < 2:
        names = "; ".join(m.name for m in machines) or "none"
        raise HarnessError(
            f"the results given hold {len(machines)} machine(s) ({names}); compare-hardware needs two "
            "or more: give each machine's results or pack with --results (repeatable)"
        )
    _check_alike(machines)
    ref = find(machines, baseline, "--baseline") if baseline else machines[0]
    priced = {find(machines, name, "--prices").name: usd for name, usd in (prices or {}).items()}
    ok = [r for r in rows if r.status == Status.OK and r.examples_per_sec.value]
    named = labels(list({r.cell.cell_id: r for r in ok}.values()))
    mine = across.groups_of(ok, {run: m.name for m in machines for run in m.run_ids})
    fitted = _spread(machines, ok, calibration)
    figs = {
        (m.name, cid): f
        for m in machines
        for cid, f in _figures(m, mine.get(m.name, []), named, fitted).items()
    }
    order = [ref, *(m for m in machines if m is not ref)]
    models = tuple(
        _model(model, order, figs, _leaders(order, ok, ratios, model), priced, min_effect)
        for model in dict.fromkeys(r.cell.model for r in ok)
    )
    base = {cid: f for (name, cid), f in figs.items() if name == ref.name}
    table = tuple(
        Row(f.cell.model, f.label, cid, f, None if name == ref.name else _versus(f, base[cid], min_effect))
        for (name, cid), f in sorted(figs.items(), key=lambda kv: (kv[0][1], kv[0][0] != ref.name, kv[0][0]))
        if cid in base
    )
    dtype = next((p.dtype for p in ref.peaks if all(peak_of(m.peaks, p.dtype).value for m in machines)), "")
    peaks = tuple(_peak_versus(m, ref, dtype, min_effect) for m in order[1:])
    return HardwareComparison(tuple(order), ref.name, min_effect, models, table, priced, peaks, dtype, fitted)


def _check_alike(machines: Sequence[MachineRuns]) -> None:
    """Refuse machines whose runs' figures do not mean the same thing (protocol) or that ran other
    TensorFlow or Keras versions."""
    for what, get, fix in (
        (
            "measurement-protocol version",
            lambda r: str(r.protocol),
            "measure both with suite versions of one protocol (the newer suite on both machines)",
        ),
        (
            "TensorFlow / Keras",
            lambda r: r.software,
            "install one TensorFlow and Keras on both machines (the suite pins them in pyproject.toml)",
        ),
    ):
        seen = {get(r): (m.name, r.run_id) for m in machines for r in m.runs}
        if len(seen) > 1:
            found = "; ".join(f"{v} on {name!r} (run {run})" for v, (name, run) in seen.items())
            raise HarnessError(f"refusing to compare runs of different {what}: {found}; {fix}")


def _figures(
    m: MachineRuns, ok: Sequence[CellRow], named: Mapping[str, str], fitted: RunSpread
) -> dict[str, Figure]:
    """Each configuration's :class:`Figure` on machine ``m`` (its rows ``ok``)."""
    out = {}
    for cid, by_run in across.by_run(ok).items():
        mine = list(by_run.values())
        energy = sorted(e for r in mine if (e := r.energy.energy_j_per_example))
        median = energy[len(energy) // 2] if energy else None
        side = across.side(mine, fitted, max(len(m.instances), 1))
        out[cid] = Figure(m.name, mine[0].cell, named[cid], side, median)
    return out


def _spread(machines: Sequence[MachineRuns], ok: Sequence[CellRow], calibration: RunSpread) -> RunSpread:
    """The calibration set's spread pooled with each instance's own runs, and the instance-to-
    instance spread of the machines measured on two or more instances."""
    instances = [
        [[r for r in ok if r.run.run_id in runs] for runs in (m.instances or {"": m.run_ids}).values()]
        for m in machines
    ]
    return across.spread([g for m in instances for g in m], calibration) + across.instance_spread(
        [m for m in instances if len(m) >= 2]
    )


def _versus(f: Figure, ref: Figure, min_effect: float) -> Versus:
    return across.versus(f.machine, f.side, ref.side, min_effect)


def _leaders(
    machines: Sequence[MachineRuns], ok: Sequence[CellRow], ratios: Sequence[RatioRow], model: str
) -> dict[str, str]:
    """MachineRuns -> the cell id its newest run that raced ``model`` named fastest."""
    out = {}
    for m in machines:
        for run in reversed(m.run_ids):
            mine = [r for r in ok if r.run.run_id == run], [x for x in ratios if x.run.run_id == run]
            found = [a for a in answers(*mine) if a.model == model]
            if found:
                out[m.name] = found[0].leader.cell.cell_id
                break
    return out


def _model(
    model: str,
    machines: Sequence[MachineRuns],
    figs: Mapping[tuple[str, str], Figure],
    leaders: Mapping[str, str],
    prices: Mapping[str, float],
    min_effect: float,
) -> ModelAnswer:
    ref = machines[0].name
    best = {m.name: figs[(m.name, leaders[m.name])] for m in machines if m.name in leaders}
    measured = {name for (name, _), f in figs.items() if f.cell.model == model}
    unraced = tuple(m.name for m in machines if m.name in measured and m.name not in best)
    at_best = tuple(_versus(f, best[ref], min_effect) for n, f in best.items() if n != ref and ref in best)
    same_id = _shared_config(model, machines, figs, leaders.get(ref))
    base = figs[(ref, same_id)] if same_id else None
    same = tuple(_versus(figs[(m.name, same_id)], base, min_effect) for m in machines[1:] if base and same_id)
    info = MODELS.get(model)
    epoch = info.epoch_examples if info else 0
    costs = {name: _cost(f, prices[name], epoch) for name, f in best.items() if name in prices}
    title = info.title if info else model
    plain = base is not None and same_id != leaders.get(ref) and STRATEGIES[base.cell.strategy].reference
    leader = max(best, key=lambda n: best[n].side.value) if len(best) >= 2 else ""
    others = [n for n in best if n != leader] if leader else []
    leads = tuple(dataclasses.replace(_versus(best[leader], best[n], min_effect), group=n) for n in others)
    no_bf16 = tuple(n for m in machines if (n := _no_bf16(m, model, figs)))
    label = base.label if base else ""
    return ModelAnswer(
        model, title, best, unraced, at_best, label, plain, same, costs, epoch, leader, leads, no_bf16
    )


def _no_bf16(m: MachineRuns, model: str, figs: Mapping[tuple[str, str], Figure]) -> NoBf16 | None:
    """:class:`NoBf16` where machine ``m`` has no GPU, trained ``model`` but never in mixed bfloat16,
    and its CPU has bfloat16 units (or its runs recorded no machine facts); else None."""
    trained = {f.cell.precision for (n, _), f in figs.items() if n == m.name and f.cell.model == model}
    units = None if m.facts.partial else m.facts.bf16_units
    if not trained or "mixed_bfloat16" in trained or units == () or m.facts.gpus:
        return None
    return NoBf16(m.name, units, tuple(sorted(trained)))


def _shared_config(
    model: str, machines: Sequence[MachineRuns], figs: Mapping[tuple[str, str], Figure], ref_best: str | None
) -> str | None:
    """The configuration every machine measured, compared on all of them: the plain custom loop
    (the reference strategy on one device, a custom loop, no accumulation: the configuration a
    plain script trains), else the reference machine's best, else None."""
    ref = machines[0].name
    mine = [
        f.cell
        for (name, cid), f in figs.items()
        if name == ref and f.cell.model == model and all((m.name, cid) in figs for m in machines)
    ]
    plain = [
        c
        for c in mine
        if STRATEGIES[c.strategy].reference and c.accum_steps == 1 and c.loop == "ctl" and c.tenants == 1
    ]
    if plain:
        return min(plain, key=lambda c: (c.replicas * c.workers, c.per_replica_batch)).cell_id
    return ref_best if ref_best in {c.cell_id for c in mine} else None


def _cost(f: Figure, usd_per_hour: float, epoch_examples: int) -> Cost:
    """USD per million examples = usd_per_hour / (examples/s x 3600) x 1e6; per epoch likewise
    for ``epoch_examples``; the CI from the throughput's (low throughput, high cost)."""
    e = f.estimate

    def per(examples: float) -> Estimate:
        def usd(eps: float | None) -> float | None:
            return None if not eps else usd_per_hour * examples / (eps * 3600)

        return Estimate(usd(e.value), usd(e.high), usd(e.low))

    return Cost(usd_per_hour, per(1e6), per(epoch_examples) if epoch_examples else None)


def _peak_versus(m: MachineRuns, ref: MachineRuns, dtype: str, min_effect: float) -> Versus:
    """m's peak in ``dtype`` / the reference's, CI from the two 95% CIs taken as normal on the log
    scale: log-ratio +- hypot of the two CIs' log half-widths."""
    a, b = peak_of(m.peaks, dtype), peak_of(ref.peaks, dtype)
    r, basis = Ratio(math.nan, math.nan, math.nan, 0, 0), "no peak measured"
    if a.value and a.low and a.high and b.value and b.low and b.high:
        half = math.hypot(math.log(a.high / a.low), math.log(b.high / b.low)) / 2
        centre = math.log(a.value / b.value)
        r = Ratio(a.value / b.value, math.exp(centre - half), math.exp(centre + half), 1, 1)
        basis = "each run's peak processes"
    return Versus(m.name, r, judge(r.value, r.low, r.high, min_effect), basis)


def parse_price(item: str) -> tuple[str, float]:
    """``NAME=USD`` -> (NAME, USD per instance-hour); HarnessError naming the item otherwise."""
    name, sep, usd = item.rpartition("=")
    try:
        value = float(usd)
    except ValueError:
        value = -1.0
    if not sep or not name.strip() or not (value > 0 and math.isfinite(value)):
        raise HarnessError(
            f"Received --prices {item!r}; expected NAME=USD (a machine's name and its price per "
            "instance-hour in US dollars, > 0) or a price file (CSV with columns machine,usd_per_hour, "
            'or TOML [machines."NAME"] usd_per_hour = 2.5).'
        )
    return name.strip(), value


def parse_price_table(text: str, source: str) -> dict[str, float]:
    """A price file's text (CSV ``machine,usd_per_hour`` or TOML ``[machines."NAME"]
    usd_per_hour = X``; ``source`` names the file) -> machine name -> USD per instance-hour."""
    import csv
    import io
    import tomllib

    try:
        if source.endswith(".toml"):
            table = tomllib.loads(text).get("machines", {})
            items = [(str(k), v["usd_per_hour"]) for k, v in table.items()]
        else:
            items = [(r["machine"], r["usd_per_hour"]) for r in csv.DictReader(io.StringIO(text))]
        out = {name: float(usd) for name, usd in items}
    except (KeyError, ValueError, TypeError, tomllib.TOMLDecodeError) as e:
        out = {}
        error = f"{type(e).__name__}: {e}"
    else:
        error = "no machine in it" if not out else ""
        bad = [n for n, v in out.items() if not (v > 0 and math.isfinite(v))]
        error = error or (f"price of {bad[0]!r} is not > 0" if bad else "")
    if error:
        raise HarnessError(
            f"cannot read the price file {source} ({error}); expected CSV with columns "
            'machine,usd_per_hour or TOML [machines."NAME"] usd_per_hour = 2.5 (USD per instance-hour).'
        )
    return out
