"""``python -m harness run``: measure a selection of cells and append their rows to the results.

On a real cluster (``--cluster tf_config|slurm``) every task runs this same command: the chief
measures and writes every row, a peer takes part in every cell, a server serves the whole run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import errno
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.commands.output import add_json, give
from harness.commands.selection import (
    Selection,
    add_dry_run,
    add_selection_args,
    dry_run_text,
    platform_text,
    select,
)
from harness.commands.shared import interrupt_on_sigterm
from harness.commands.vocabulary import refuse_renamed
from harness.contract.columns import flatten
from harness.contract.outputs import RunOutput
from harness.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, HarnessError
from harness.launch.lease import server_names
from harness.spec.strategies import Role

STARTED = time.monotonic()
"""When this command started (about: when it imported this module); a run's budget counts from here."""

if TYPE_CHECKING:
    from harness.launch.resume import Resumed
    from harness.launch.runner import RunResult
    from harness.spec.cell import Cell
    from harness.spec.protocol import Platform, Protocol

NAME = "run"

EXITS: dict[int, str] = {
    0: "every cell measured, or unsupported here (a row says why), or not measured within the budget",
    1: "a cell failed or ran wrongly (named on stderr), or the run stopped itself (another program disturbed it)",
    2: "bad input: nothing was measured",
    130: "interrupted (Ctrl-C, SIGTERM): every row measured before is kept",
}
"""Exit code -> what it means (``--help`` and docs/reference/cli.md list them)."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help="measure a sweep and append rows to the results dataset")
    add_selection_args(p)
    p.add_argument(
        "--min-effect",
        type=float,
        default=None,
        help="the smallest relative change a ratio's verdict calls higher or lower, and the band of "
        "equivalence [1/(1 + F), 1 + F] (a fraction). Default: the sweep's, 0.05",
    )
    out = p.add_argument_group("output")
    out.add_argument("--results", default="results", help="results folder written. Default: results")
    add_json(out)
    refuse_renamed(p, NAME)
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_ID",
        help="go on with a local run that was stopped before it wrote its rows (killed, a full "
        "disk, Ctrl-C), from its journal under --results: every instance already measured is kept, the "
        "rest of its budget measured, each row written once. RUN_ID: its id, or latest. The "
        "cells, protocol and budget are the journal's (no other selection flag is taken)",
    )
    p.add_argument(
        "--wait-lock",
        action="store_true",
        help="when another run measures on this machine, wait for it to end (default: exit, "
        "naming it): two runs at once spoil each other's figures",
    )
    add_dry_run(p, "the cells it would measure, the first ones and their processes")
    return p


KEPT_WITH_RESUME = {"command", "resume", "results", "json", "wait_lock", "dry_run", "func"}
"""The flags ``--resume`` takes besides itself (and ``--dry-run``); every other one comes from the journal."""


def _selection_flags_given(args: argparse.Namespace) -> list[str]:
    """The flags given on the command line other than :data:`KEPT_WITH_RESUME` (their values
    differ from the defaults)."""
    parser = argparse.ArgumentParser()
    defaults = add_parser(parser.add_subparsers()).parse_args([])
    return [
        "--" + k.replace("_", "-")
        for k, v in vars(args).items()
        if k not in KEPT_WITH_RESUME and hasattr(defaults, k) and getattr(defaults, k) != v
    ]


def run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        return _resume(args)
    sel = with_min_effect(select(args), args.min_effect)  # every check made before the first process
    if args.dry_run:
        print(dry_run_text(sel, _plan_head(sel, Path(args.results))))
        return EXIT_OK
    interrupt_on_sigterm()
    out = Path(args.results)
    config = sel.cluster
    if config is not None and config.role != Role.CHIEF:
        return _cluster_task(sel, out)  # a peer or server: its chief holds its machine's lock
    with _machine_lock(out, args.wait_lock):
        if config is None or not server_names(config):
            return _measure(sel, out)
        return _measure_holding_the_lease(sel, out)


def _machine_lock(out: Path, wait: bool) -> Any:
    """The machine-wide measuring lock (:mod:`harness.launch.lock`), taken: a HarnessError naming
    its holder when another run measures here (unless ``wait``)."""
    from harness.launch.lock import MachineLock

    lock = MachineLock(out)
    lock.acquire(wait)
    return lock


def _resume(args: argparse.Namespace) -> int:
    """``run --resume RUN_ID``: the journal read and checked against this machine, then the run goes
    on where it stopped."""
    from harness.launch import resume
    from harness.launch.platform import machine
    from harness.launch.runner import suite_version

    given = _selection_flags_given(args)
    if given:
        raise HarnessError(
            f"Received {', '.join(given)} with --resume; a resumed run measures the cells, protocol "
            "and budget of its journal. Expected only --results, --json, --wait-lock and --dry-run."
        )
    out = Path(args.results)
    resumed = resume.load(out, args.resume, lambda: machine(suite_version()))
    if args.dry_run:
        plan = resumed.plan
        print(
            f"run {plan.run_id} (resume): {len(plan.cells)} cells, {resumed.instances()} group "
            f"instances already measured, {resumed.elapsed_s / 60:.1f} of {plan.protocol.budget_min:g} "
            f"min of its budget spent; results -> {out}"
        )
        return EXIT_OK
    interrupt_on_sigterm()
    with _machine_lock(out, args.wait_lock):
        return _measure_local(
            resumed.plan.cells,
            resumed.plan.protocol,
            resumed.plan.platform,
            resumed.plan.mnist_path,
            out,
            resumed=resumed,
            contenders=resumed.plan.contenders,
        )


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
            f"run: {pr.processes} pass(es) over the cells as the chief of a real cluster{peak}; "
            f"results -> {out}"
        )
    from harness.launch.budget import max_live, minimum_s, plan_groups
    from harness.launch.turns import Plan
    from harness.spec.rules import unsupported_reason

    live = max_live(pr)
    runnable = [c for c in sel.cells if unsupported_reason(c, sel.platform) is None]
    found = plan_groups(runnable, sel.contenders, live)
    heads = sum(g.race for g in found)
    first = (
        f"first each model's usual choices raced against each other ({heads} sets), then " if heads else ""
    )
    need = minimum_s(found, pr, Plan.of(pr, 0.0)) / 60
    return (
        f"run: {first}{len(found) - heads} sets of configurations compared live (at most {live} "
        f"processes at once: --max-live), taking turns of ~{pr.turn_s:g} s, each set in "
        f"{pr.processes} to {pr.max_processes} rounds of fresh processes within a budget of "
        f"{pr.budget_min:g} min (the minimum: about {need:.1f} min on 2 cores){peak}; "
        f"workers {'forked from a fork server (--no-fork: fresh interpreters)' if pr.fork else 'fresh interpreters'}; "
        f"results -> {out}"
    )


def _measure_holding_the_lease(sel: Selection, out: Path) -> int:
    """A parameter-server chief measures while holding the run lease
    (:class:`harness.launch.lease.RunLease`), so that the servers end when the run does."""
    from harness.launch.lease import RunLease, lease_address

    config = sel.cluster
    assert config is not None
    try:
        lease = RunLease(config)
    except OSError as e:
        raise HarnessError(
            f"the chief's run lease needs TCP port {lease_address(config)[1]} on this "
            f"host (the servers watch it to learn when the run is over): "
            f"{e.strerror or e}",
            EXIT_FAILURE,
        ) from None
    with lease:
        print(
            f"run lease on port {lease.port}: {len(server_names(config))} servers end when this run does",
            flush=True,
        )
        code = _measure(sel, out)
        missing = lease.finish(code)
        if missing:
            print(f"servers never connected to the run lease: {', '.join(missing)}", file=sys.stderr)
    return code


def _cluster_task(sel: Selection, out: Path) -> int:
    """A task of a real cluster other than the chief: a peer takes part in every cell, a server
    serves the whole run; neither writes results."""
    from harness.launch.lease import lease_address
    from harness.launch.real_cluster import cluster_launcher, serve_cluster_task
    from harness.launch.runner import follow_sweep

    config = sel.cluster
    assert config is not None
    task = f"{config.task_type}{config.task_index}"
    stamp = dt.datetime.now(dt.UTC)
    log_dir = out / "logs" / stamp.strftime("%Y-%m-%d") / f"{stamp:%Y%m%dT%H%M%SZ}-{task}"
    print(
        f"cluster task {config.task_type} {config.task_index} ({config.role}) at {config.address}; "
        f"logs -> {log_dir}",
        flush=True,
    )
    try:
        if config.role == Role.SERVER:
            host, port = lease_address(config)
            print(f"serving until the chief's run is over (its run lease at {host}:{port})", flush=True)
            end = serve_cluster_task(sel.cells[0], sel.worker_options(log_dir), config)
            print(f"server done: {end.detail}; exit code {end.code}", flush=True)
            return end.code
        counts = follow_sweep(
            sel.cells, sel.protocol, sel.platform, sel.worker_options(log_dir), cluster_launcher(config)
        )
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"peer done: {counts['finished']} cells finished, {counts['failed']} failed")
    return EXIT_OK


def _measure(sel: Selection, out: Path) -> int:
    """The chief (or a local run): measure every cell, store every row, print the summary."""
    from harness.launch.real_cluster import cluster_launcher
    from harness.launch.runner import new_run_id, run_cell_processes, run_sweep

    if sel.sweep.kind == "collectives":
        return _measure_collectives(sel, out)
    config = sel.cluster
    launcher = run_cell_processes if config is None else cluster_launcher(config)
    where = (
        ""
        if config is None
        else (
            f" as the chief of a {config.workers}-worker"
            + (f", {config.ps}-ps" if config.ps else "")
            + " cluster"
        )
    )
    what = f"sweep {sel.sweep.name!r}: {len(sel.cells)} cells on {platform_text(sel.platform)}{where}; results -> {out}"
    pr = sel.protocol
    if config is None:
        named = "" if sel.sweep.name == "custom" else sel.sweep.name
        return _measure_local(
            sel.cells, pr, sel.platform, sel.mnist_path, out, what, contenders=sel.contenders, sweep=named
        )
    run_id = new_run_id(dt.datetime.now(dt.UTC))
    print(f"run {run_id}: {what}", flush=True)
    result = run_sweep(
        sel.cells, pr, sel.platform, out, sel.mnist_path, launcher=launcher, adaptive=False, run_id=run_id
    )
    return _summary(result, pr, config is None)


def _measure_local(
    cells: list[Cell],
    pr: Protocol,
    platform: Platform,
    mnist_path: str | None,
    out: Path,
    what: str = "",
    resumed: Resumed | None = None,
    contenders: Sequence[str] = (),
    sweep: str = "",
) -> int:
    """A local run in turns, journaled (or a journaled one resumed), then its summary; ``what``:
    the run in words, on its first line after its id; ``contenders``: the headline cells' ids. A
    new run whose minimum cannot fit its budget stops here, before any process starts."""
    from harness.launch import forks
    from harness.launch.budget import check_minimum, max_live, plan_groups, run_in_turns
    from harness.launch.lock import command_line
    from harness.launch.platform import machine
    from harness.launch.resume import plan_entry
    from harness.launch.run_params import Identity, Output, Work
    from harness.launch.runner import new_run_id, run_date, suite_version
    from harness.launch.turns import Plan
    from harness.results import journal
    from harness.spec.rules import unsupported_reason

    if resumed is None:
        check_minimum(
            plan_groups(
                [c for c in cells if unsupported_reason(c, platform) is None], contenders, max_live(pr)
            ),
            pr,
            Plan.of(pr, 0.0),
            sweep,
        )
        run_id = new_run_id(dt.datetime.now(dt.UTC))
        entry = plan_entry(
            run_id,
            run_date(run_id),
            cells,
            pr,
            platform,
            mnist_path,
            machine(suite_version()),
            command_line(),
            contenders,
        )
        log = journal.Journal.create(journal.path_of(out, run_id), entry)
        print(f"run {run_id}: {what}", flush=True)
    else:
        run_id = resumed.plan.run_id
        log = journal.Journal.reopen(resumed.path)
        print(
            f"run {run_id} resumed: {resumed.instances()} group instances kept from its journal, "
            f"{resumed.elapsed_s / 60:.1f} of {pr.budget_min:g} min of its budget spent; results -> {out}",
            flush=True,
        )
    print(f"(if it is stopped: python -m harness run --resume {run_id} --results {out})", flush=True)
    with log, forks.serving(pr.fork):
        try:
            result = run_in_turns(
                Work(tuple(cells), pr, platform, mnist_path, tuple(contenders)),
                Output(out, log),
                Identity(run_id, resumed, STARTED if resumed is None else None),
            )
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            raise HarnessError(
                f"the disk is full ({e.filename or out}): the run stopped; every instance measured "
                f"so far is in its journal. Free some space, then: python -m harness run --resume "
                f"{run_id} --results {out}",
                EXIT_FAILURE,
            ) from None
    return _summary(result, pr, True)


def _summary(result: RunResult, pr: Protocol, local: bool) -> int:
    """The run's table, footnotes, ratios, counts, unstable cells and costs, then the answer in
    words (the run's last screen); its exit code."""
    from harness.analysis import answer
    from harness.analysis.ratios_text import Names, ratios_text
    from harness.analysis.tables import (
        FOOTNOTE,
        OVERSUBSCRIBED_NOTE,
        TURNS_FOOTNOTE,
        logical_note,
        summary_table,
    )

    print()
    print(summary_table(result.rows))
    print()
    print(
        (TURNS_FOOTNOTE if local else FOOTNOTE).format(
            repeats=pr.repeats,
            window_s=pr.window_s,
            processes=pr.processes,
            max_processes=pr.max_processes,
            unstable_cv=pr.unstable_cv,
            turn_s=pr.turn_s,
            blocks=pr.blocks,
        )
    )
    if result.ratios:
        print()
        print(ratios_text(result.ratios, pr.turn_s, pr.blocks, pr.min_effect, result.rows))
    note = logical_note(result.rows)
    if note:
        print(note)
    if any(r.ran.oversubscribed for r in result.rows):
        print(OVERSUBSCRIBED_NOTE)
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
    give(
        RunOutput(
            run_id=result.run_id,
            written=[str(p) for p in result.paths],
            counts=dict(Counter(str(r.status) for r in result.rows)),
            failed=failed,
            cells=[flatten(r) for r in result.rows],
            ratios=[flatten(r) for r in result.ratios],
        )
    )
    code = _ending(result, "cells", failed)
    if result.ratios:
        print()
        print(answer.text(answer.answers(result.rows, result.ratios), result.rows))
    return code


def with_min_effect(sel: Selection, min_effect: float | None) -> Selection:
    """The selection with ``--min-effect`` in its protocol (checked there: HarnessError naming it)."""
    if min_effect is None:
        return sel
    return dataclasses.replace(sel, protocol=dataclasses.replace(sel.protocol, min_effect=min_effect))


def failed_cells(rows: Sequence[Any]) -> list[str]:
    """The ids of the rows whose cell failed or ran wrongly (``failed``, ``invalid``): what makes a
    run end non-zero. ``unsupported`` (TensorFlow cannot run it, known before) and ``not
    measured`` (the budget) are not failures."""
    from harness.contract.records import Status

    return [r.cell.cell_id for r in rows if r.status in (Status.FAILED, Status.INVALID)]


def _measure_collectives(sel: Selection, out: Path) -> int:
    """--sweep collectives: time every topology's all-reduces, store and print the rows."""
    from harness.analysis.collectives import table_lines
    from harness.analysis.tables import render_table
    from harness.launch.collectives import run_collectives
    from harness.launch.runner import new_run_id

    run_id = new_run_id(dt.datetime.now(dt.UTC))
    print(
        f"run {run_id}: sweep 'collectives': {len(sel.cells)} all-reduce topologies on "
        f"{platform_text(sel.platform)}, sizes up to {sel.max_bytes:,} bytes and each model's "
        f"gradient set, {sel.protocol.processes} processes each; results -> {out}",
        flush=True,
    )
    result = run_collectives(sel.cells, sel.protocol, sel.platform, out, sel.max_bytes, run_id=run_id)
    print()
    print(render_table(*table_lines(result.collectives)))
    print()
    print(
        "time: median over processes of one all-reduce (each process: the median of "
        f"{sel.protocol.repeats} windows of ~{sel.protocol.window_s:g} s of in-graph calls / calls); "
        "busbw = bytes / time x 2(n-1)/n (nccl-tests); check: the sum of participant k's k+1"
    )
    _print_counts(result.run_id, [str(r.get("status")) for r in result.collectives])
    return _ending(result, "topologies")


def _print_counts(run_id: str, statuses: Sequence[str]) -> None:
    """``run ID: 50 ok, 6 unsupported``."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    print(f"run {run_id}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))


def _ending(result: Any, what: str, failed: Sequence[str] = ()) -> int:
    """The folders written, and the exit code: 130 when interrupted (naming what was not run), 1
    when the run stopped on its own or a cell failed (naming them), else 0."""
    for p in result.paths:
        print(f"wrote {p}")
    if result.stopped:
        print(f"error: {result.stopped}; every row measured before is kept.", file=sys.stderr)
        return EXIT_FAILURE
    if result.interrupted:
        print(
            f"interrupted: {result.not_run} {what} not run; every row measured before is kept.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if failed:
        listed = "".join(f"\n  {cell_id}" for cell_id in failed)
        print(
            f"error: {len(failed)} {what} failed or ran wrongly (their rows' reason says why; "
            f"unsupported cells are not failures):{listed}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return EXIT_OK
