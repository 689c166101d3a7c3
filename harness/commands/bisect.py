"""``python -m harness bisect``: which TensorFlow build between a good and a bad one brought a
slowdown of one cell? The dated nightlies between them on the package index, bisected with an
``ab`` in turns at each step (:mod:`harness.analysis.versions.bisect`), everything but TensorFlow held
fixed (:mod:`harness.launch.versions.builds`), journaled so that the same command resumes a bisect that
was stopped (:mod:`harness.launch.versions.bisect`). Exit codes: :data:`EXITS`."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import shutil
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.analysis.run.tables import render_table
from harness.analysis.versions import ab, ratio_figure
from harness.analysis.versions import bisect as bs
from harness.analysis.versions.bisect_text import BuildFacts, Context, answer, markdown, table
from harness.commands.output import CommandResult, say_wrote
from harness.commands.selection import Selection, refuse_tenant_framework, select
from harness.commands.shared import (
    add_envs,
    add_measuring,
    add_pair_rule,
    interrupt_on_sigterm,
    pair_rule,
    paired,
)
from harness.contract.outputs import BisectOutput, BisectStep
from harness.errors import EXIT_INTERRUPTED, HarnessError
from harness.launch.cells.runner import plan as runnable
from harness.launch.system.lock import taken
from harness.launch.versions import builds
from harness.launch.versions.bisect import (
    JOURNAL,
    AbMeasurer,
    Bisect,
    BisectKey,
    Result,
    Settings,
    folder_of,
    key_of,
    replay,
)
from harness.results.journal import Journal, read
from harness.spec import words
from harness.spec.axes import AXES, AXIS_BY_NAME
from harness.spec.cell import Cell

NAME = "bisect"
EXITS: dict[int, str] = {
    0: "ended: the two builds found, or nothing to bisect",
    1: "a step's processes failed",
    2: "bad input",
    3: "not finished (the budget spent: rerun to go on), a step undecided, or the two builds not confirmed",
    130: "interrupted (rerun the same command to go on)",
}
EXIT_BY_OUTCOME = {
    bs.Ending.FOUND: 0,
    bs.Ending.NO_SLOWDOWN: 0,
    bs.Ending.FAILED: 1,
    bs.Ending.UNDECIDED: 3,
    bs.Ending.UNCONFIRMED: 3,
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    p.add_argument(
        "--good", required=True, metavar="SPEC", help="the fast build, e.g. 'tensorflow-cpu==2.20.*'"
    )
    p.add_argument(
        "--bad", required=True, metavar="SPEC", help="the slow build, e.g. 'tensorflow-cpu==2.21.*'"
    )
    p.add_argument(
        "--nightly",
        default=None,
        metavar="DIST",
        help="the distribution whose dated builds lie between them. Default: tf-nightly-cpu for "
        "tensorflow-cpu, tf-nightly for tensorflow, else the bad build's own",
    )
    p.add_argument(
        "--index",
        default=None,
        metavar="URL|FOLDER",
        help=f"package index: a simple repository URL or a folder of wheels. Default: $PIP_INDEX_URL "
        f"or {builds.DEFAULT_INDEX}",
    )
    add_envs(p, "the shared environment and each build are installed and reused")
    add_pair_rule(
        p,
        "step",
        (4, 12),
        "fewest pairs before a step's verdict",
        "the endpoints and the final step: slower when the CI of B/A lies wholly below 1 - F",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start this bisect again (the old one's folder is kept, renamed) instead of going on",
    )
    add_measuring(
        p,
        "none: give the axes of the one cell to bisect on",
        "the bisect goes under RESULTS/bisect",
        budget=(120.0, "minutes the bisect may spend on its steps; rerun the same command to go on"),
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the candidate builds and the steps expected; install and measure nothing",
    )
    return p


@dataclasses.dataclass(frozen=True)
class BisectFlags:
    """What the bisect compares, every flag checked before any install or process."""

    good: str
    bad: str
    index: builds.Index
    nightly: str | None
    rule: ab.Rule
    sel: Selection

    @property
    def cell(self) -> Cell:
        return self.sel.cells[0]

    def identity(self) -> BisectKey:
        """What makes two commands the same bisect (the second goes on with the first): the builds,
        the cell and how it is timed; not the decision rule (a rerun with more pairs goes on) nor
        the budget."""
        timing = {k: v for k, v in dataclasses.asdict(self.sel.protocol).items() if k != "budget_min"}
        return BisectKey(good=self.good, bad=self.bad, index=self.index.where, nightly=self.nightly,
                        cell=self.cell.id, timing=timing)  # fmt: skip


def plan(args: argparse.Namespace) -> BisectFlags:
    """Every check made before the first install (HarnessError on bad input)."""
    if not any(getattr(args, a.name) is not None for a in AXES) and args.sweep is None:
        raise HarnessError(
            "bisect needs the one cell to measure: its axes, e.g. --model dense --strategy mirrored "
            "--replicas 2 --batch 64."
        )
    rule = pair_rule(args)
    sel = refuse_tenant_framework(select(args), NAME)
    cells = [c for c, why in runnable(sel.cells, sel.platform) if why is None]
    if len(cells) != 1:
        raise HarnessError(
            f"Received a selection{f' (--sweep {args.sweep})' if args.sweep else ''} with "
            f"{len(cells)} cells that run here"
            + (f" ({', '.join(c.id for c in cells[:6])})" if cells else "")
            + "; bisect measures one cell: expected axis flags that select exactly one."
        )
    index = builds.Index(args.index or os.environ.get("PIP_INDEX_URL") or builds.DEFAULT_INDEX)
    good, bad = builds.requirement("--good", args.good), builds.requirement("--bad", args.bad)
    return BisectFlags(str(good), str(bad), index, args.nightly, rule, dataclasses.replace(sel, cells=cells))


def _new_plan(p: BisectFlags) -> dict[str, Any]:
    """The journal's plan line: the builds from the index (the candidates between good and bad)."""
    good = builds.resolve("--good", p.good, p.index)
    bad = builds.resolve("--bad", p.bad, p.index)
    if Version(bad.version) <= Version(good.version):
        raise HarnessError(
            f"Received --good {p.good!r} ({good.version}) and --bad {p.bad!r} ({bad.version}); "
            "expected a bad build newer than the good one."
        )
    dist = p.nightly or builds.nightly_dist(good, bad)
    between = builds.candidates(p.index, dist, good, bad)
    return {
        "identity": p.identity(),
        "rule": dataclasses.asdict(p.rule),
        "builds": [dataclasses.asdict(b) for b in (good, *between, bad)],
        "cell": p.cell.to_dict(),
        "nightly": dist,
    }


def _say(line: str) -> None:
    print(line, flush=True)


def run(args: argparse.Namespace) -> CommandResult:
    p = plan(args)
    folder = folder_of(Path(args.results), key_of(p.identity()))
    journal_path = folder / JOURNAL
    again = journal_path.is_file() and not args.fresh
    plan_line = read(journal_path)[0] if again else _new_plan(p)
    state = replay([{**plan_line, "kind": "plan"}]).state
    n = len(state.builds) - 2
    _say(
        f"bisect: {state.builds[0].spec} (good) to {state.builds[-1].spec} (bad), {n} {plan_line['nightly']} "
        f"builds between; about {bs.steps_expected(n)} steps of ab in turns on {p.cell.id}, "
        f"{p.rule.min_pairs} to {p.rule.max_pairs} pairs each; budget {p.sel.protocol.budget_min:g} min"
    )
    if args.dry_run:
        for b in state.builds:
            _say(f"  {b.spec}  {b.date}")
        _say("dry run: nothing started.")
        return CommandResult(0)
    if again:
        known = replay(read(journal_path))
        kept = bs.State(known.state.builds, known.state.skipped, bs.reopen(known.state.measured, p.rule))
        done = bs.next_step(kept)
        if isinstance(done, bs.Done) and known.ended:
            _say(f"bisect {folder}: ended before (--fresh measures it again); its result:")
            return _finish(p, folder, Result(kept, known.installed, done))
        _say(f"bisect {folder}: going on from its journal")
    interrupt_on_sigterm()
    with taken(Path(args.results), args.wait_lock):
        envs = Path(args.envs)
        _say(f"bisect: the environment every build shares, from {state.builds[0].spec} (under {envs})")
        held = builds.held(state.builds[0], envs, p.index)
        if again and plan_line.get("held_pin") != held.pin:
            raise HarnessError(
                f"the shared environment {held.python} changed since this bisect started (pin "
                f"{held.pin}, the journal's {plan_line.get('held_pin')}); rerun with --fresh."
            )
        if journal_path.is_file() and not again:  # --fresh: the old bisect kept, renamed
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            shutil.move(str(folder), str(folder.with_name(f"{folder.name}.{stamp}")))
        journal = (
            Journal.reopen(journal_path)
            if again
            else Journal.create(journal_path, {**plan_line, "held_pin": held.pin, "held": held.shown()})
        )
        settings = Settings(p.rule, p.sel.protocol.seed, p.sel.protocol.budget_min * 60)
        measurer = AbMeasurer(p.cell, p.sel.protocol, p.sel.platform, Path(args.results), held, p.sel.machine)
        with journal:
            bisect = Bisect(
                journal, settings, lambda b: builds.install(b, envs, p.index, held), measurer, _say
            )
            try:
                result = bisect.run()
            except KeyboardInterrupt:
                _say(
                    f"\nbisect: interrupted; every pair so far is in {journal_path}: rerun the same command to go on"
                )
                so_far = Result(bisect.state, bisect.known.installed, stopped="interrupted")
                return dataclasses.replace(_finish(p, folder, so_far), code=EXIT_INTERRUPTED)
    return _finish(p, folder, result)


def _finish(p: BisectFlags, folder: Path, result: Result) -> CommandResult:
    """The answer, the table, the page and the figure; the exit code and the ``--json`` object."""
    entries = read(folder / JOURNAL)
    ctx = Context(
        f"{AXIS_BY_NAME['model'].say(p.cell.model)} with {words.describe(p.cell.to_dict(), always=True)}",
        str(entries[0].get("held") or "shared environment"),
        {i: BuildFacts(x.tf_version, x.git_version) for i, x in result.installed.items()},
    )
    lines = answer(result.state, result.done, result.stopped, ctx)
    print()
    for line in lines:
        _say(line)
    print("\n" + render_table(*table(result.state)))
    figure = ratio_figure.draw(ratio_figure.bisect(result.state, result.done), folder, ratio_figure.BISECT)
    page = folder / "bisect.md"
    page.write_text(markdown(lines, result.state, figure[0].name if figure else None))
    say_wrote([page, *figure, folder / JOURNAL])
    return CommandResult(
        3 if result.done is None else EXIT_BY_OUTCOME[result.done.outcome], _output(result, folder)
    )


def _output(result: Result, folder: Path) -> BisectOutput:
    s, done = result.state, result.done
    lo, hi = (done.lo, done.hi) if done else bs.bounds(s)
    return BisectOutput(
        folder=str(folder),
        outcome=str(done.outcome) if done else "not finished",
        good=s.builds[lo].spec,
        bad=s.builds[hi].spec,
        good_git=result.installed[lo].git_version if lo in result.installed else None,
        bad_git=result.installed[hi].git_version if hi in result.installed else None,
        steps=[
            BisectStep(
                kind=str(m.step.kind),
                build=s.builds[m.step.b].spec,
                against=s.builds[m.step.a].spec,
                **paired(m.decision, m.failure),
            )
            for m in s.measured
        ],
        skipped={s.builds[i].spec: why for i, why in s.skipped.items()},
    )
