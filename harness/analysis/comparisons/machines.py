"""Which machine each run measured, from its rows: the one notion of a machine for every reader of
several runs (``compare-hardware``, ``compare``, ``pack --machine``). Pure. A machine is a name, its
facts (:class:`harness.contract.machine.MachineFacts`) and its measured matmul peaks with their CIs
(per compute dtype); when runs are one machine: docs/explanation/statistics.md, "What is a machine"
(:attr:`MachineRuns.instances`, :attr:`MachineRuns.why`). ``renames`` (run id -> name, ``--name REF=NAME``)
apply first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.contract.columns import Estimate
from harness.contract.machine import PROTOCOL_VERSION, MachineFacts
from harness.contract.records import CellRow
from harness.errors import HarnessError


@dataclass(frozen=True)
class HostPeak:
    """A run's matmul peak in one compute dtype on the whole host: FLOP/s with its 95% CI."""

    dtype: str
    """The compute dtype (float32, bfloat16, float16): a run measures each one it trains in."""
    flops: Estimate


def peak_of(peaks: Sequence[HostPeak], dtype: str) -> Estimate:
    """The peak of ``dtype`` among ``peaks``, FLOP/s (empty: not measured)."""
    return next((p.flops for p in peaks if p.dtype == dtype), Estimate())


@dataclass(frozen=True)
class RunMachine:
    """What one run's rows say of the machine that measured it."""

    run_id: str
    start: str
    """The run's first row's timestamp (ISO 8601 UTC)."""
    name: str
    facts: MachineFacts
    peaks: tuple[HostPeak, ...]
    """Its matmul peak in each compute dtype it trained in, float32 first (:func:`host_peaks`)."""
    protocol: int
    software: str
    """TensorFlow and Keras versions, ``2.21.0 / 3.15.0``."""
    suite: str
    instance: str = ""
    """The host instance's id ("" where the run recorded none)."""

    @property
    def peak(self) -> Estimate:
        """The float32 peak, FLOP/s: the one that tells machines apart (empty: not measured)."""
        return peak_of(self.peaks, "float32")


@dataclass(frozen=True)
class MachineRuns:
    """One machine: its name, facts, peaks (its first run's) and runs, oldest first."""

    name: str
    facts: MachineFacts
    peaks: tuple[HostPeak, ...]
    runs: tuple[RunMachine, ...]
    why: str = ""
    """How it was told apart from a machine of the same name ("" when its name alone did)."""

    @property
    def run_ids(self) -> tuple[str, ...]:
        return tuple(r.run_id for r in self.runs)

    @property
    def instances(self) -> dict[str, tuple[str, ...]]:
        """Instance id -> its run ids (runs that recorded none are left out)."""
        out: dict[str, tuple[str, ...]] = {}
        for r in self.runs:
            if r.instance:
                out[r.instance] = (*out.get(r.instance, ()), r.run_id)
        return out


def host_peaks(rows: Sequence[CellRow]) -> tuple[HostPeak, ...]:
    """The run's peak on the whole host in each compute dtype its rows carry, float32 first (a CPU
    row's peak scaled from its ``peak_cores`` to the host's cores; a GPU row's divided by its
    devices), FLOP/s."""
    found: dict[str, Estimate] = {}
    for row in rows:
        p, m, est = row.peak, row.machine, row.peak.peak_flops_per_sec
        if est.value is None or m is None or not p.peak_dtype or p.peak_dtype in found:
            continue
        cpu = (m.host_cores or 1) / (p.peak_cores or m.host_cores or 1)
        scale = 1 / max(row.ran.device_count or 1, 1) if m.device_kind == "GPU" else cpu
        found[p.peak_dtype] = Estimate(
            *(x if x is None else x * scale for x in (est.value, est.low, est.high))
        )
    return tuple(HostPeak(d, found[d]) for d in sorted(found, key=lambda d: (d != "float32", d)))


def of_run(run_id: str, rows: Sequence[CellRow], renames: Mapping[str, str]) -> RunMachine:
    """:class:`RunMachine` of one run's rows (all of one run id)."""
    first = rows[0]
    facts = MachineFacts.from_json(first.run.machine_facts or "{}")
    name = renames.get(run_id) or first.run.machine or facts.default_name
    m = next((r.machine for r in rows if r.machine is not None), None)
    software = f"{m.tf_version or '?'} / {m.keras_version or '?'}" if m else "? / ?"
    return RunMachine(
        run_id=run_id,
        start=min(r.run.timestamp for r in rows),
        name=name,
        facts=facts,
        peaks=host_peaks(rows),
        protocol=first.run.protocol_version or PROTOCOL_VERSION,
        software=software,
        suite=(first.run.suite_version or "").split("+")[0],
        instance=first.run.instance_id or "",
    )


def identify(rows: Sequence[CellRow], renames: Mapping[str, str] | None = None) -> list[MachineRuns]:
    """The machines the rows' runs measured (see the module doc), by name; HarnessError (exit 2)
    where one name stands for machines with different facts."""
    by_run: dict[str, list[CellRow]] = {}
    for r in rows:
        by_run.setdefault(r.run.run_id, []).append(r)
    runs = sorted((of_run(k, v, renames or {}) for k, v in by_run.items()), key=lambda r: (r.start, r.run_id))
    out: list[MachineRuns] = []
    for name in dict.fromkeys(r.name for r in runs):
        mine = [r for r in runs if r.name == name]
        known = [r for r in mine if not r.facts.partial]
        for other in known[1:]:
            diff = known[0].facts.differences(other.facts)
            if diff:
                raise HarnessError(
                    f"two machines under one name {name!r}: runs {known[0].run_id} and {other.run_id} "
                    f"differ ({'; '.join(diff[:3])}); give one of them its own name with --name "
                    f"{other.run_id}=NAME (or `run --machine NAME` when measuring)."
                )
        out += [_machine(name, mine, "")] if len(known) == len(mine) else _split_by_peak(name, mine)
    return sorted(out, key=lambda m: m.name)


def overlap(a: Estimate, b: Estimate) -> bool:
    """Whether two peaks' CIs overlap (True where either has none: nothing tells them apart)."""
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return True
    return a.low <= b.high and b.low <= a.high


def _split_by_peak(name: str, runs: Sequence[RunMachine]) -> list[MachineRuns]:
    """The runs of one name grouped by overlapping peak CIs, in order of peak."""
    clusters: list[list[RunMachine]] = []
    for r in sorted(runs, key=lambda r: r.peak.value or 0.0):
        if clusters and overlap(clusters[-1][0].peak, r.peak):
            clusters[-1].append(r)
        else:
            clusters.append([r])
    if len(clusters) == 1:
        return [_machine(name, runs, "")]
    peaks = " and ".join(peak_words(c[0].peak) for c in clusters)
    why = (
        f"the runs named {name!r} report the same facts, but their measured peaks' 95% CIs do not "
        f"overlap ({peaks}): {len(clusters)} machines, told apart by their peaks"
    )
    named = ((f"{name}, peak {(c[0].peak.value or 0) / 1e9:,.0f} GFLOP/s", c) for c in clusters)
    return [_machine(n, sorted(c, key=lambda r: r.start), why) for n, c in named]


def _machine(name: str, runs: Sequence[RunMachine], why: str) -> MachineRuns:
    """The machine of ``runs`` (oldest first): its first run's peak, which its name may carry."""
    return MachineRuns(name, runs[-1].facts, runs[0].peaks, tuple(runs), why)


def peak_words(p: Estimate) -> str:
    """``458 GFLOP/s [382, 549]``."""
    if p.value is None:
        return "no peak measured"
    ci = f" [{p.low / 1e9:,.0f}, {p.high / 1e9:,.0f}]" if p.low is not None and p.high is not None else ""
    return f"{p.value / 1e9:,.0f} GFLOP/s{ci}"


def find(machines: Sequence[MachineRuns], name: str, flag: str) -> MachineRuns:
    """The machine called ``name`` (exactly, or the one whose name starts with it); HarnessError
    naming the machines there are."""
    exact = [m for m in machines if m.name == name]
    found = exact or [m for m in machines if m.name.startswith(name)]
    if len(found) == 1:
        return found[0]
    known = "; ".join(repr(m.name) for m in machines)
    what = "matches several machines" if found else "names no machine"
    raise HarnessError(f"Received {flag}={name!r}: it {what}; expected one of: {known}.")
