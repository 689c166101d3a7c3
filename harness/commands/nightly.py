"""``python -m harness nightly``: tonight's candidate build against a pinned reference build, in
turns, one point per cell appended to its series, both decisions of
:mod:`harness.analysis.versions.nightly`, a markdown summary and the dashboard. Exit codes: :data:`EXITS`
(3, undecided: a cell's CI reaches below 1 - F without lying wholly below it)."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from harness.analysis.run.tables import render_table
from harness.analysis.versions import nightly
from harness.analysis.versions.nightly import Rules
from harness.analysis.versions.nightly_text import markdown, round_line, table
from harness.commands.output import CommandResult, say_wrote
from harness.commands.paths import add_markdown, check_writable_file, write_markdown
from harness.commands.selection import (
    Selection,
    add_dry_run,
    dry_run_text,
    platform_text,
    refuse_tenant_framework,
    select,
)
from harness.commands.shared import (
    add_envs,
    add_measuring,
    add_pair_rule,
    add_side_envs,
    interrupt_on_sigterm,
    side_envs,
)
from harness.contract.columns import flatten
from harness.contract.outputs import NightlyOutput
from harness.errors import EXIT_INTERRUPTED, EXIT_OK, HarnessError
from harness.launch.system.platform import cpu_model
from harness.launch.versions import nightly as launch_nightly
from harness.launch.versions.envs import check_side, env_folder, is_interpreter
from harness.spec.rules import unsupported_reason

NAME = "nightly"

EXITS: dict[int, str] = {
    0: "no regression",
    1: "a regression, or a cell that failed tonight",
    2: "bad input, or an environment that cannot be installed: nothing judged",
    3: "undecided",
    130: "interrupted",
}


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    p.add_argument(
        "--candidate",
        required=True,
        metavar="SPEC|PYTHON",
        help="the build under test: a requirement spec (installed, upgraded, into its own venv "
        "under --envs each night, e.g. tf-nightly-cpu or 'tensorflow-cpu==2.21.*') or the path of "
        "an interpreter with TensorFlow",
    )
    p.add_argument(
        "--baseline",
        required=True,
        metavar="SPEC|PYTHON",
        help="the pinned build compared against: a spec, resolved once and pinned by its pip freeze "
        "(RESULTS/nightly/reference-<pin>.txt; later nights install that lock), or an interpreter",
    )
    add_side_envs(p, ("the baseline", "the candidate"), "; part of the night's record")
    p.add_argument(
        "--label",
        default=None,
        help="the night's label on the series: a commit, a date, a wheel version. Default: the UTC time, "
        "e.g. 2026-11-25T03:17Z",
    )
    add_pair_rule(
        p,
        "cell",
        (10, 200),
        "fewest usable pairs per cell, budget or not; past them the rounds go to the cells whose CI is "
        "widest",
        "rule (a): tonight's change is an alarm when its 95%% CI lies beyond 1 +- F",
    )
    p.add_argument(
        "--false-alarm",
        type=float,
        default=0.002,
        help="rule (b): the probability of calling a change point that is not there, per cell and "
        "night. Default: 0.002",
    )
    add_envs(p, "the sides' venvs are built and reused")
    add_markdown(p, "the summary")
    add_measuring(
        p,
        "nightly; axes given alone narrow it",
        "nightly's rows and points go under RESULTS/nightly, the dashboard to RESULTS/nightly/index.html",
    )
    add_dry_run(p, "the cells, the budget and how each side's environment would be made")
    return p


def plan(args: argparse.Namespace) -> tuple[Selection, Rules, str]:
    """Every check before the first install or process (HarnessError on bad input)."""
    check_side("--candidate", args.candidate)
    check_side("--baseline", args.baseline)
    side_envs(args)
    if not 2 <= args.min_pairs <= args.max_pairs:
        raise HarnessError(
            f"Received --min-pairs={args.min_pairs}, --max-pairs={args.max_pairs}; expected "
            "2 <= min-pairs <= max-pairs."
        )
    try:
        rules = Rules(min_effect=args.min_effect, alpha=args.false_alarm)
    except ValueError as e:
        raise HarnessError(f"Received --min-effect/--false-alarm: {e}.") from None
    label = args.label if args.label is not None else dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")
    if not label.strip() or "," in label:
        raise HarnessError(f"Received --label={label!r}; expected a non-empty label without commas.")
    if args.markdown:
        check_writable_file(args.markdown, "--markdown", keep=not args.dry_run)
    if args.sweep is None:  # axes given alone narrow the nightly sweep (e.g. --model my.py:build)
        args.sweep = "nightly"
    sel = refuse_tenant_framework(select(args), "nightly")
    reasons = [unsupported_reason(c, sel.platform) for c in sel.cells]
    if all(reasons):
        where = "" if args.cluster == "local" else f" with --cluster {args.cluster}"  # fixed by a cluster
        raise HarnessError(
            f"Received a selection of {len(sel.cells)} cells{where}, none of which runs here "
            f"({platform_text(sel.platform)}; {sel.cells[0].id}: {reasons[0]}); expected at least "
            "one: `python -m harness list` with the same flags says why each is unsupported."
        )
    return sel, rules, label.strip()


def _side_plan(role: str, value: str, envs: str) -> str:
    if is_interpreter(value):
        return f"{role}: the interpreter {value}"
    pinned = " (pinned by its lock file once resolved)" if role == "reference" else " (upgraded each night)"
    return f"{role}: {value!r} installed into {env_folder(Path(envs), role, value)}{pinned}"


def run(args: argparse.Namespace) -> CommandResult:
    sel, rules, label = plan(args)
    budget_min = sel.protocol.budget_min
    head = (
        f"nightly {label}: {len(sel.cells)} cells of sweep {sel.sweep.name!r}, budget {budget_min:g} min, "
        f"pairs in turns (at least {args.min_pairs} per cell); rule (a) min effect {rules.min_effect:.0%}, "
        f"rule (b) alpha {rules.alpha}"
    )
    if args.dry_run:
        candidate = _side_plan("candidate", args.candidate, args.envs)
        reference = _side_plan("reference", args.baseline, args.envs)
        print(dry_run_text(sel, f"{head}\n{candidate}\n{reference}"))
        return CommandResult(EXIT_OK)
    return _night(args, sel, rules, label)


def _night(args: argparse.Namespace, sel: Selection, rules: Rules, label: str) -> CommandResult:
    interrupt_on_sigterm()
    budget = launch_nightly.NightBudget(sel.protocol.budget_min * 60, args.min_pairs, args.max_pairs)
    baseline_env, candidate_env = side_envs(args)
    request = launch_nightly.NightRequest(
        args.candidate,
        args.baseline,
        candidate_env,
        baseline_env,
        Path(args.envs),
        label,
        rules,
        budget,
        args.wait_lock,
    )
    night = launch_nightly.night(
        sel.work(),
        Path(args.results),
        request,
        report=lambda outcomes, rnd, spent: print(
            round_line(outcomes, rnd, spent, budget.seconds), flush=True
        ),
    )
    result, rows = night.result, night.rows
    if result.interrupted:
        print(f"\nnightly {label} ({result.night_id}): interrupted; no point appended to the series")
        say_wrote(result.paths, " (the pairs measured so far)")
        return CommandResult(EXIT_INTERRUPTED)
    failed = sum(v is None for v in night.verdicts)
    verdict = nightly.overall([v for v in night.verdicts if v is not None], rules, failed)
    print("\n" + render_table(*table(rows)))
    print(f"\nnightly {label} ({result.night_id}): {verdict}")
    write_markdown(args.markdown, markdown(rows, verdict, rules, cpu_model(), str(night.dashboard)))
    written = [w for w in [*result.paths, night.written, night.dashboard] if w is not None]
    say_wrote(written)
    return CommandResult(
        nightly.EXIT_CODES[verdict],
        NightlyOutput(
            night_id=result.night_id,
            label=label,
            verdict=verdict,
            written=[str(w) for w in written],
            points=[flatten(r) for r in rows],
        ),
    )
