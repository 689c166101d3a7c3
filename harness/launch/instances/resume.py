"""What a local run's journal (:mod:`harness.results.journal`) holds, and reading it back to resume.
Its entries, in the order a run appends them:

- ``plan`` (first line): run id and date, cells, protocol, platform, MNIST file, the machine
  (:func:`harness.launch.system.platform.machine`; ``facts`` and ``name`` in newer journals), command line;
- ``peak``: the run's peak log after each peak process;
- ``instance``: one group instance as it ended, each member's end and its turns (all that
  :class:`harness.launch.sweep.budget.TurnsRun` keeps of it);
- ``races``: the second stage began; ``breakdown``: one cell's step breakdown, or why none
  (:mod:`harness.launch.instances.breakdowns`); ``resumed``: a later session took over; ``end``: the last
  peak is measured, the rows are left to write.

Every entry but the plan carries ``elapsed_s``, the run's seconds spent when it was appended: a
resumed run's budget goes on from the last one (the seconds between it and the kill are lost)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypedDict, cast

from harness.contract.columns import Columns, flatten, unflatten
from harness.contract.events import Event, Facts, ProcessRow
from harness.contract.machine import MachineFacts
from harness.contract.records import Breakdown, CellRow, WindowRow
from harness.contract.tenant import TenantFacts
from harness.errors import HarnessError
from harness.formulas.turns import Turn
from harness.launch.cells.peak import PeakLog
from harness.launch.cells.runner import CellEnd
from harness.launch.instances.breakdowns import Apart
from harness.launch.instances.turns import Instance
from harness.launch.system.platform import HostMachine, instance_id
from harness.results import journal
from harness.spec.cell import Cell
from harness.spec.groups import Group
from harness.spec.protocol import Platform, Protocol


def plan_entry(
    run_id: str,
    date: str,
    cells: Sequence[Cell],
    protocol: Protocol,
    platform: Platform,
    mnist_path: str | None,
    machine: Mapping[str, str],
    command: str,
    contenders: Sequence[str] = (),
) -> dict[str, Any]:
    """The journal's first line: everything a resumed run needs to go on as this one would."""
    return {
        "run_id": run_id,
        "date": date,
        "cells": [c.to_dict() for c in cells],
        "protocol": dataclasses.asdict(protocol),
        "platform": dataclasses.asdict(platform),
        "mnist_path": mnist_path,
        "machine": dict(machine),
        "command": command,
        "contenders": list(contenders),
    }


@dataclass(frozen=True)
class JournaledPlan:
    """A journal's plan, read back."""

    run_id: str
    date: str
    cells: list[Cell]
    protocol: Protocol
    platform: Platform
    mnist_path: str | None
    machine: dict[str, str]
    command: str
    contenders: tuple[str, ...] = ()
    """The headline cells' ids (:func:`harness.spec.groups.headline_groups`); none in older journals."""
    cluster: dict[str, int] | None = None
    """A real cluster's run: its task counts by type (None: a local run)."""

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> JournaledPlan:
        platform = {**entry["platform"], "gpu_ids": tuple(entry["platform"].get("gpu_ids", ()))}
        return cls(
            entry["run_id"],
            entry["date"],
            [Cell.from_dict(c) for c in entry["cells"]],
            Protocol(**entry["protocol"]),
            Platform(**platform),
            entry.get("mnist_path"),
            dict(entry.get("machine", {})),
            entry.get("command", ""),
            tuple(entry.get("contenders", ())),
            entry.get("cluster"),
        )


MACHINE_WORDS = {
    "cpu": "CPU model",
    "cpus": "CPU count",
    "gpus": "GPUs",
    "suite": "suite version",
    "tensorflow": "TensorFlow version",
    "keras": "Keras version",
    "name": "machine name",
    "facts": "machine facts",
    "facts.cpu_model": "CPU model name",
    "facts.cpu_family": "CPU family",
    "facts.cpu_model_number": "CPU model number",
    "facts.cpu_stepping": "CPU stepping",
    "facts.cpu_flags": "CPU flags",
    "facts.cores": "usable cores",
    "facts.cpu_quota": "cgroup CPU quota",
    "facts.caches": "CPU caches",
    "facts.memory_gib": "memory (GiB)",
    "facts.gpus": "GPU models",
    "facts.gpu_memory_mib": "GPU memory (MiB)",
    "facts.gpu_driver": "GPU driver",
}
"""The journal's machine keys in words; ``facts.F``: each field F of
:class:`~harness.contract.machine.MachineFacts`."""

NOT_COMPARED = ("name", "facts")
"""Keys :func:`differences` does not compare as text: the name (a resumed run keeps the
journal's, whatever this host would be called) and the facts (compared one by one)."""


def _words(value: object) -> str:
    if isinstance(value, tuple):
        value = ", ".join(map(str, value))
    return str(value) if value not in ("", 0, 0.0, ()) else "none"


def fact_differences(journaled: MachineFacts, here: MachineFacts) -> list[str]:
    """The facts that differ, in words (:data:`MACHINE_WORDS`): each as ``X: A in the journal, B
    here``; CPU flags as the ones only the journal's machine has and the ones only this one has."""
    out = []
    for f in fields(MachineFacts):
        a, b = getattr(journaled, f.name), getattr(here, f.name)
        if a == b:
            continue
        word = MACHINE_WORDS.get(f"facts.{f.name}", f.name)
        if f.name == "cpu_flags":
            only_a = sorted(set(a.split()) - set(b.split()))
            only_b = sorted(set(b.split()) - set(a.split()))
            out.append(
                f"{word}: {' '.join(only_a[:6]) or 'none'} only in the journal, "
                f"{' '.join(only_b[:6]) or 'none'} only here"
            )
        else:
            out.append(f"{word}: {_words(a)} in the journal, {_words(b)} here")
    return out


def differences(journaled: Mapping[str, str], here: Mapping[str, str]) -> list[str]:
    """What differs between the machine a run was measured on and this one, in words (empty: the
    run may be resumed here). The facts are compared where both sides have them (an older journal
    has none); the name never is."""
    found = [
        f"{MACHINE_WORDS.get(k, k)}: {journaled.get(k) or 'none'!s} in the journal, {here.get(k) or 'none'!s} here"
        for k in sorted(set(journaled) | set(here))
        if k not in NOT_COMPARED and journaled.get(k, "") != here.get(k, "")
    ]
    if journaled.get("facts") and here.get("facts"):
        found += fact_differences(
            MachineFacts.from_json(journaled["facts"]), MachineFacts.from_json(here["facts"])
        )
    return found


def host_of(plan: JournaledPlan, given: str | None, here: MachineFacts) -> HostMachine:
    """The machine a resumed run's rows carry: the journal's name and facts (an older journal:
    ``given``, else this host's default name, and ``here``, this host's facts, which
    :func:`load` found equal). ``given``: ``--machine`` with ``--resume``; a name other than the
    journal's is a HarnessError naming the run's."""
    name = plan.machine.get("name")
    if name and given is not None and given != name:
        raise HarnessError(
            f"Received --machine {given!r} with --resume; run {plan.run_id} measures as machine "
            f"{name!r} (its journal's name): expected --machine {name!r} or no --machine."
        )
    facts = MachineFacts.from_json(plan.machine["facts"]) if plan.machine.get("facts") else here
    return HostMachine(name or given or facts.default_name, facts, instance_id())


class CellEndEntry(TypedDict):
    """A member's :class:`CellEnd` as journaled: its cell's id, its row's columns (None: no row)."""

    cell_id: str
    event: str
    row: Columns | None
    report: ProcessRow
    windows: list[WindowRow]
    reason: str
    facts: Facts | None
    wall_s: float
    launch_s: float


class InstanceEntry(TypedDict):
    """What :meth:`harness.launch.sweep.budget.TurnsRun.apply` uses of an :class:`Instance`: its group's
    name, its members' ends by key, its turns' fields."""

    group: str
    index: int
    ends: dict[str, CellEndEntry]
    turns: list[dict[str, float | str]]
    steps: dict[str, int]
    wall_s: float
    dropped: str
    culprit: str | None
    phases: dict[str, float]
    processes: int
    tenant_facts: dict[str, TenantFacts]


class ApartEntry(TypedDict):
    """A cell's :class:`Apart` step breakdown: its id, the breakdown's fields, its seconds."""

    cell: str
    breakdown: dict[str, float | str | None]
    seconds: float


class PeakEntry(TypedDict):
    """The run's :class:`PeakLog` so far."""

    samples: dict[str, list[float]]
    tensor_float_32: bool
    failures: list[str]
    seconds: float


def encode_end(end: CellEnd) -> CellEndEntry:
    return {
        "cell_id": end.cell.id,
        "event": end.event.value,
        "row": None if end.row is None else flatten(end.row),
        "report": end.report,
        "windows": [w.copy() for w in end.windows],
        "reason": end.reason,
        "facts": end.facts,
        "wall_s": end.wall_s,
        "launch_s": end.launch_s,
    }


def decode_end(data: Mapping[str, Any], cells: Mapping[str, Cell]) -> CellEnd:
    return CellEnd(
        cells[data["cell_id"]],
        Event(data["event"]),
        unflatten(CellRow, data["row"]) if data["row"] else None,  # {}: an older journal's
        cast(ProcessRow, data.get("report") or {}),
        data["windows"],
        data["reason"],
        data["facts"],
        data["wall_s"],
        data["launch_s"],
    )


def encode_instance(instance: Instance) -> InstanceEntry:
    """What :meth:`harness.launch.sweep.budget.TurnsRun.apply` uses of an instance, as JSON."""
    return {
        "group": instance.group.name,
        "index": instance.index,
        "ends": {k: encode_end(e) for k, e in instance.ends.items()},
        "turns": [dataclasses.asdict(t) for t in instance.turns],
        "steps": instance.steps,
        "wall_s": instance.wall_s,
        "dropped": instance.dropped,
        "culprit": instance.culprit,
        "phases": instance.phases,
        "processes": instance.processes,
        "tenant_facts": instance.tenant_facts,
    }


def decode_instance(data: Mapping[str, Any], group: Group, cells: Mapping[str, Cell]) -> Instance:
    return Instance(
        group,
        data["index"],
        {k: decode_end(e, cells) for k, e in data["ends"].items()},
        [Turn(**t) for t in data["turns"]],
        dict(data["steps"]),
        data["wall_s"],
        data["dropped"],
        data["culprit"],
        dict(data["phases"]),
        data["processes"],
        dict(data.get("tenant_facts", {})),
    )


def encode_apart(apart: Apart) -> ApartEntry:
    return {"cell": apart.cell_id, "breakdown": dataclasses.asdict(apart.breakdown), "seconds": apart.seconds}


def decode_apart(data: Mapping[str, Any]) -> Apart:
    return Apart(str(data["cell"]), Breakdown(**data["breakdown"]), float(data["seconds"]))


def peak_entry(peaks: PeakLog) -> PeakEntry:
    return {
        "samples": peaks.samples,
        "tensor_float_32": peaks.tensor_float_32,
        "failures": peaks.failures,
        "seconds": peaks.seconds,
    }


def restore_peak(peaks: PeakLog, entry: Mapping[str, Any]) -> None:
    """The peak log as journaled (its samples, seconds and failures so far)."""
    peaks.samples = {d: list(v) for d, v in entry["samples"].items()}
    peaks.tensor_float_32 = bool(entry["tensor_float_32"])
    peaks.failures = list(entry["failures"])
    peaks.seconds = float(entry["seconds"])


@dataclass(frozen=True)
class Resumed:
    """A run to resume: its plan, its entries after the plan, its journal's path."""

    plan: JournaledPlan
    entries: list[journal.Entry]
    path: Path

    @property
    def elapsed_s(self) -> float:
        """The run's seconds spent up to its last entry."""
        return max((float(e.get("elapsed_s", 0.0)) for e in self.entries), default=0.0)

    @property
    def resumes(self) -> int:
        """Sessions that took the run over before this one."""
        return sum(1 for e in self.entries if e["kind"] == "resumed")

    @property
    def ended(self) -> bool:
        """Whether the run measured everything (only its rows are left to write)."""
        return any(e["kind"] == "end" for e in self.entries)

    def instances(self) -> int:
        return sum(1 for e in self.entries if e["kind"] == "instance")

    def taken_over(self, kept: str, out: Path) -> str:
        """The line a session that goes on with the run says: ``kept`` (how, and what of the
        journal it keeps), its budget spent so far, and where its results go."""
        return (
            f"run {self.plan.run_id} resumed{kept} kept from its journal, {self.elapsed_s / 60:.1f} of "
            f"{self.plan.protocol.budget_min:g} min of its budget spent; results -> {out}"
        )


def load(root: Path, ref: str, machine_here: Callable[[], Mapping[str, str]]) -> Resumed:
    """The run ``ref`` (a run id or ``latest``) under results root ``root``, checked: a
    HarnessError naming what differs when this machine or software is not the journal's.
    ``machine_here`` is asked only once the journal is found and read (it starts ``git``)."""
    path = journal.find(root, ref)
    entries = journal.read(path)
    plan = JournaledPlan.of(entries[0])
    found = differences(plan.machine, machine_here())
    if found:
        raise HarnessError(
            f"run {plan.run_id} cannot be resumed here: "
            + "; ".join(found)
            + ". Its figures would mix two setups; start a new run instead."
        )
    return Resumed(plan, entries[1:], path)
