"""``python -m harness run``: measure a selection of cells and append their rows to the results.

On a real cluster (``--cluster tf_config|slurm``) every task runs this same command: the chief
measures and writes every row, a peer takes part in every cell, a server serves the whole run."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis.run import answer
from harness.analysis.run.ratios_text import Names, ratios_text
from harness.analysis.run.tables import (
    FOOTNOTE,
    OVERSUBSCRIBED_NOTE,
    TURNS_FOOTNOTE,
    logical_note,
    render_table,
    summary_table,
)
from harness.analysis.scale.collectives import table_lines
from harness.commands.output import CommandResult, add_json, say_wrote
from harness.commands.selection import (
    Selection,
    add_dry_run,
    add_selection_args,
    check_machine_name,
    dry_run_text,
    platform_text,
    resumed_cluster,
    select,
)
from harness.commands.shared import RUN_MIN_EFFECT, add_min_effect, interrupt_on_sigterm
from harness.contract.columns import flatten
from harness.contract.outputs import RunOutput
from harness.contract.records import CellRow
from harness.errors import EXIT_INTERRUPTED, EXIT_OK, HarnessError
from harness.launch.cells.cluster import ClusterConfig
from harness.launch.cells.runner import RunResult
from harness.launch.instances.resume import host_of
from harness.launch.sweep import sweep_run
from harness.launch.sweep.sweep_run import Request, exit_code, failed_cells
from harness.launch.system.platform import machine_facts
from harness.spec.protocol import Protocol, bf16_reason
from harness.spec.strategies import Role

STARTED = time.monotonic()
"""When this command started (about: when it imported this module); a run's budget counts from here."""

NAME = "run"

EXITS: dict[int, str] = {
    0: "every cell measured, or unsupported here (a row says why), or not measured within the budget",
    1: "a cell failed or ran wrongly (named on stderr), or the run stopped itself (another program disturbed it)",
    2: "bad input: nothing was measured",
    130: "interrupted (Ctrl-C, SIGTERM): every row measured before is kept",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    add_selection_args(p, writes_rows=True)
    add_min_effect(
        p,
        RUN_MIN_EFFECT,
        "the smallest relative change a ratio's verdict calls higher or lower, and the band of "
        "equivalence [1/(1 + F), 1 + F] (a fraction)",
        sweep_s=True,
    )
    out = p.add_argument_group("output")
    out.add_argument("--results", default="results", help="results folder written. Default: results")
    add_json(out)
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_ID",
        help="go on with a local run that was stopped before it wrote its rows (killed, a full "
        "disk, Ctrl-C), from its journal under --results: every instance already measured is kept, the "
        "rest of its budget measured, each row written once. RUN_ID: its id, or latest. The "
        "cells, protocol, budget and machine name are the journal's (no other selection flag is "
        "taken; --machine, if given, must be the journal's name)",
    )
    p.add_argument(
        "--wait-lock",
        action="store_true",
        help="when another run measures on this machine, wait for it to end (default: exit, "
        "naming it): two runs at once spoil each other's figures",
    )
    add_dry_run(p, "the cells it would measure, the first ones and their processes")
    return p


KEPT_WITH_RESUME = {
    "command",
    "resume",
    "results",
    "json",
    "wait_lock",
    "dry_run",
    "machine_name",
    "cluster",
    "ps",
}
"""The flags ``--resume`` takes besides itself (and ``--dry-run``); every other one comes from the
journal (``--machine`` is checked against the journal's name)."""


def run(args: argparse.Namespace) -> CommandResult:
    if args.resume is not None:
        return _resume(args)
    sel = select(args)  # every check made before the first process
    if args.min_effect is not None:  # checked by the protocol (a HarnessError naming it)
        sel = dataclasses.replace(sel, protocol=dataclasses.replace(sel.protocol, min_effect=args.min_effect))
    out = Path(args.results)
    if args.dry_run:
        print(dry_run_text(sel, _plan_head(sel, out)))
        return CommandResult(EXIT_OK)
    interrupt_on_sigterm()
    config = sel.cluster
    if config is not None and config.role != Role.CHIEF:  # its chief holds its machine's lock
        return _take_part(config, out)
    request = Request(out, args.wait_lock, _what(sel, out))
    if sel.sweep.kind == "collectives":
        return _collectives_summary(
            sweep_run.measure_collectives(sel.work(), request, sel.max_bytes), sel.protocol
        )
    if config is not None:
        return _summary(sweep_run.measure_as_chief(sel.work(), request, config), sel.protocol, False)
    named = "" if sel.sweep.name == "custom" else sel.sweep.name
    request = dataclasses.replace(request, sweep=named, started=STARTED)
    return _summary(sweep_run.measure_local(sel.work(), request), sel.protocol, True)


def _what(sel: Selection, out: Path) -> str:
    """The run in words: its first line, after its id."""
    if sel.sweep.kind == "collectives":
        return (
            f"sweep 'collectives': {len(sel.cells)} all-reduce topologies on "
            f"{platform_text(sel.platform)}, sizes up to {sel.max_bytes:,} bytes and each model's "
            f"gradient set, {sel.protocol.processes} processes each; results -> {out}"
        )
    config = sel.cluster
    where = (
        ""
        if config is None
        else f" as the chief of a {config.workers}-worker"
        + (f", {config.ps}-ps" if config.ps else "")
        + " cluster"
    )
    return f"sweep {sel.sweep.name!r}: {len(sel.cells)} cells on {platform_text(sel.platform)}{where}{_bf16(sel)}; results -> {out}"


def _bf16(sel: Selection) -> str:
    """ "; <why mixed bfloat16 is raced or not>" for a sweep whose contenders depend on it, else ""."""
    return (
        f"; {bf16_reason(sel.platform.cpu_bf16)}"
        if sel.sweep.on_bf16 and sel.platform.device_kind == "cpu"
        else ""
    )


def _take_part(config: ClusterConfig, out: Path) -> CommandResult:
    """A peer's or a server's part of a real-cluster run (:func:`harness.launch.sweep.sweep_run.take_part`)."""
    try:
        end = sweep_run.take_part(out, config)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return CommandResult(EXIT_INTERRUPTED)
    print(end.text, flush=True)
    return CommandResult(end.code)


def _resume(args: argparse.Namespace) -> CommandResult:
    """``run --resume RUN_ID``: the journal read and checked against this machine (its software and
    facts; ``--machine``, if given, against its name), then the run goes on where it stopped, its
    rows named as the journal's machine."""
    name = None if args.machine_name is None else check_machine_name(args.machine_name)
    defaults = add_parser(argparse.ArgumentParser().add_subparsers(), "").parse_args([])
    given = [  # the flags given other than KEPT_WITH_RESUME (their values differ from the defaults)
        "--" + k.replace("_", "-")
        for k, v in vars(args).items()
        if k not in KEPT_WITH_RESUME and hasattr(defaults, k) and getattr(defaults, k) != v
    ]
    if given:
        raise HarnessError(
            f"Received {', '.join(given)} with --resume; a resumed run measures the cells, protocol "
            "and budget of its journal. Expected only --results, --json, --wait-lock, --machine, "
            "--dry-run, and on a real cluster --cluster and --ps."
        )
    out = Path(args.results)
    config = resumed_cluster(args)
    if config is not None and config.role != Role.CHIEF and not args.dry_run:  # the chief has the journal
        interrupt_on_sigterm()
        return _take_part(config, out)
    resumed = sweep_run.load_journal(out, args.resume)
    plan = resumed.plan
    host = host_of(plan, name, machine_facts())
    if args.dry_run:
        print(
            f"run {plan.run_id} (resume): {len(plan.cells)} cells, {resumed.instances()} group "
            f"instances already measured, {resumed.elapsed_s / 60:.1f} of {plan.protocol.budget_min:g} "
            f"min of its budget spent; machine {host.name!r}; results -> {out}"
        )
        return CommandResult(EXIT_OK)
    interrupt_on_sigterm()
    request = Request(out, args.wait_lock)
    if config is not None:
        return _summary(sweep_run.resume_as_chief(resumed, request, config, host), plan.protocol, False)
    return _summary(sweep_run.measure_resumed(resumed, request, host), plan.protocol, True)


def _plan_head(sel: Selection, out: Path) -> str:
    """The dry run's first line: what this process would do, and where its rows would go."""
    config = sel.cluster
    if config is not None and config.role != Role.CHIEF:
        does = "serve the chief's whole run" if config.role == Role.SERVER else "take part in every cell"
        return (
            f"run: cluster task {config.task_type} {config.task_index} ({config.role}) would "
            f"{does} (it writes no results)"
        )
    pr = sel.protocol
    if sel.sweep.kind == "collectives":
        return (
            f"run: {pr.processes} processes per all-reduce topology, sizes up to "
            f"{sel.max_bytes:,} bytes and each model's gradient set; results -> {out}"
        )
    peak = ", the matmul-peak processes first" if pr.peak else ""
    if config is not None:
        return (
            f"run: {pr.processes} pass(es) over the cells as the chief of a real cluster{peak}, "
            f"within a budget of {pr.budget_min:g} min, the other tasks following its run lease; "
            f"results -> {out}"
        )
    found = sweep_run.outline(sel.work())
    rest = found.sets - found.races
    sets = [
        f"{n} set{'s' if n != 1 else ''} of {what}"
        for n, what in (
            (found.races, "configurations raced for each model's fastest"),
            (rest, "other configurations compared"),
        )
        if n
    ]
    head = (
        f"run: {' then '.join(sets)} live (at most "
        f"{found.live} processes at once: --max-live), taking turns of ~{pr.turn_s:g} s, each set in "
        f"{pr.processes} to {pr.max_processes} rounds of fresh processes within a budget of "
        f"{pr.budget_min:g} min (the minimum: about {found.minimum_s / 60:.1f} min, estimated before any instance){peak}; "
        f"workers {'forked from a fork server (--no-fork: fresh interpreters)' if pr.fork else 'fresh interpreters'}; "
        f"results -> {out}"
    )
    if not found.contenders:
        return head
    return "\n".join((head, f"raced for each model's fastest{_bf16(sel)}:", *found.contenders))


def cluster_note(rows: Sequence[CellRow]) -> str:
    """Where a cluster run's rows were measured, in one line ("" on one node)."""
    spread = [r for r in rows if (r.ran.nodes or 1) > 1]
    if not spread:
        return ""
    r = spread[0]
    link = (
        f"the link from the chief to the slowest other node: {r.ran.link_gbps:.3g} Gbit/s (TCP, "
        "measured by the chief as the run started)"
        if r.ran.link_gbps is not None
        else "the link was not measured (no other node answered the probe)"
    )
    return f"cluster: {r.ran.nodes} nodes ({r.ran.placement}); {link}."


def _summary(result: RunResult, pr: Protocol, local: bool) -> CommandResult:
    """The run's table, footnotes, ratios, counts, unstable cells and costs, then the answer in
    words (the run's last screen); its exit code and ``--json`` object."""
    print(f"\n{summary_table(result.rows)}\n")
    print((TURNS_FOOTNOTE if local else FOOTNOTE).format(**vars(pr)))  # it names Protocol's fields
    if result.ratios:
        print()
        print(
            ratios_text(result.ratios, pr.turn_s, pr.blocks, pr.min_effect, [*result.rows, *result.unreached])
        )
    oversubscribed = OVERSUBSCRIBED_NOTE if any(r.ran.oversubscribed for r in result.rows) else ""
    for note in (logical_note(result.rows), oversubscribed, cluster_note(result.rows)):
        if note:
            print(note)
    _print_counts(result.run_id, [str(r.status) for r in result.rows])
    names = Names(result.rows)
    unstable = [r.cell.cell_id for r in result.rows if r.spread.unstable]
    if unstable:
        print(
            f"unstable: {len(unstable)} configurations whose processes disagreed by a coefficient "
            f"of variation above {pr.unstable_cv:g} (their own figures move between re-runs; the "
            "ratios in turns are not affected):"
        )
        for cell_id in unstable:
            print(f"  {names.model.get(cell_id, '')}: {names(cell_id)}")
    if result.cost:
        print(result.cost)
    elif result.time is not None and result.time.processes:
        print(result.time.text())
    failed = failed_cells(result.rows)
    code = _ending(result, "cells", failed)
    if result.ratios:
        print("\n" + answer.text(answer.answers(result.rows, result.ratios), result.rows))
    return CommandResult(
        code,
        RunOutput(
            run_id=result.run_id,
            written=[str(p) for p in result.paths],
            counts=dict(Counter(str(r.status) for r in result.rows)),
            failed=failed,
            cells=[flatten(r) for r in result.rows],
            ratios=[flatten(r) for r in result.ratios],
        ),
    )


def _collectives_summary(result: RunResult, pr: Protocol) -> CommandResult:
    """--sweep collectives: the all-reduce table, what its columns are, the counts; the exit code."""
    print(f"\n{render_table(*table_lines(result.collectives))}\n")
    print(
        "time: median over processes of one all-reduce (each process: the median of "
        f"{pr.repeats} windows of ~{pr.window_s:g} s of in-graph calls / calls); "
        "busbw = bytes / time x 2(n-1)/n (nccl-tests); check: the sum of participant k's k+1"
    )
    _print_counts(result.run_id, [str(r.get("status")) for r in result.collectives])
    return CommandResult(_ending(result, "topologies"))


def _print_counts(run_id: str, statuses: Sequence[str]) -> None:
    """``run ID: 50 ok, 6 unsupported``."""
    counts = Counter(statuses)
    print(f"run {run_id}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))


def _ending(result: RunResult, what: str, failed: Sequence[str] = ()) -> int:
    """The folders written, and why the run ends non-zero (stderr: interrupted, naming what was not
    run; stopped on its own; a cell failed, naming them); the exit code (:func:`exit_code`)."""
    say_wrote(result.paths)
    if result.stopped:
        print(f"error: {result.stopped}; every row measured before is kept.", file=sys.stderr)
    elif result.interrupted:
        print(
            f"interrupted: {result.not_run} {what} not run; every row measured before is kept.",
            file=sys.stderr,
        )
    elif failed:
        listed = "".join(f"\n  {cell_id}" for cell_id in failed)
        print(
            f"error: {len(failed)} {what} failed or ran wrongly (their rows' reason says why; "
            f"unsupported cells are not failures):{listed}",
            file=sys.stderr,
        )
    return exit_code(result)
