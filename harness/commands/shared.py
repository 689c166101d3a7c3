"""What several commands share besides the selection flags (:mod:`harness.commands.selection`) and
their ``--json`` object (:mod:`harness.commands.output`): the flags of ``ab``, ``nightly`` and
``bisect``, how a measuring command stops on a signal, and a paired decision as ``--json`` gives it.
No command module imports another command module; they import this one."""

from __future__ import annotations

import argparse
import signal
from typing import Any

from harness.analysis.comparisons import across, machines
from harness.analysis.versions.ab import Decision, Rule
from harness.commands.output import add_json
from harness.commands.selection import add_selection_args
from harness.contract.columns import unflatten_all
from harness.contract.outputs import Paired
from harness.contract.records import CellRow, Status
from harness.errors import HarnessError
from harness.formulas.across_runs import CALIBRATION, RunSpread
from harness.results import history
from harness.spec.protocol import DEFAULT_MIN_EFFECT

PAIRED_MIN_EFFECT = Rule.min_effect
"""``--min-effect`` of ``ab``, ``nightly`` and ``bisect`` (2%): two builds paired in turns on one machine."""
RUN_MIN_EFFECT = DEFAULT_MIN_EFFECT
"""``--min-effect`` of ``run`` (5%, the sweep's): ratios of a sweep's cells taken in turns in one run."""
ACROSS_MIN_EFFECT = across.MIN_EFFECT
"""``--min-effect`` of ``compare``, ``compare-hardware`` and ``compare-links`` (5%): runs that did not
take turns (a night against its history, machines, link settings)."""
ENVS = ".nightly-envs"
"""``--envs``'s default: where ``nightly`` and ``bisect`` build environments and reuse them."""


def add_side_envs(p: argparse.ArgumentParser, words: tuple[str, str], note: str = "") -> None:
    """``--baseline-env`` and ``--candidate-env``: the variables of ``words``' workers."""
    for role, word in zip(("baseline", "candidate"), words, strict=True):
        help = f"an environment variable for {word}'s workers (repeatable{note})"
        p.add_argument(f"--{role}-env", action="append", default=[], metavar="K=V", help=help)


def side_envs(args: argparse.Namespace) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """``--baseline-env`` and ``--candidate-env``, each parsed by :func:`parse_env`."""
    return parse_env("--baseline-env", args.baseline_env), parse_env("--candidate-env", args.candidate_env)


def add_min_effect(p: argparse.ArgumentParser, default: float, rule: str, sweep_s: bool = False) -> None:
    """``--min-effect FRACTION``, the smallest relative change a verdict calls (``rule``: how this
    command's verdict uses it), with ``default`` its kind of verdict's. The kinds differ in what
    the CI of a ratio can reach. Builds paired in turns (:data:`PAIRED_MIN_EFFECT`) share the
    machine's drift within each pair and add pairs until the CI decides, so 2% is reachable. A
    run's ratios (:data:`RUN_MIN_EFFECT`) share one time budget among every ratio of the sweep,
    and runs that did not take turns (:data:`ACROSS_MIN_EFFECT`) carry the run-to-run spread in
    their CI: at 2% most of their verdicts would stay undecided, so both keep the suite's 5%.
    ``sweep_s``: no default of its own (None: the sweep's protocol's, ``run``)."""
    shown = f"the sweep's, {default:g}" if sweep_s else f"{default:g}"
    given = None if sweep_s else default
    p.add_argument(
        "--min-effect", type=float, default=given, metavar="FRACTION", help=f"{rule}. Default: {shown}"
    )


def calibration(args: argparse.Namespace) -> RunSpread:
    """The project's calibration set with ``--calibration``'s runs (each machine's, by name)."""
    if not args.calibration:
        return CALIBRATION
    cells, _ = history.load(tuple(args.calibration), flag="--calibration")
    rows = [r for r in unflatten_all(CellRow, cells.to_dict("records")) if r.status == Status.OK]
    groups = across.groups_of(rows, {run: m.name for m in machines.identify(rows) for run in m.run_ids})
    return across.spread(list(groups.values()))


def add_across_runs(p: argparse.ArgumentParser) -> None:
    """``--min-effect`` and ``--calibration`` of the comparisons across runs (compare-hardware,
    compare-links)."""
    add_min_effect(
        p,
        ACROSS_MIN_EFFECT,
        "the smallest difference across runs called higher or lower, and the equivalence band's "
        "half-width (the suite's one band: the CIs carry the run-to-run spread)",
    )
    p.add_argument(
        "--calibration",
        action="append",
        default=[],
        metavar="PATH",
        help="a results folder or pack of repeated runs (A/A: the same sweep, twice or more, on one "
        "machine) whose run-to-run spread joins the project's calibration set in every CI; repeatable",
    )


def across_min_effect(args: argparse.Namespace) -> float:
    """``--min-effect`` of :func:`add_across_runs`, checked before any work."""
    if not 0 < args.min_effect < 1:
        raise HarnessError(
            f"Received --min-effect={args.min_effect}; expected a fraction in (0, 1), e.g. 0.05."
        )
    return float(args.min_effect)


def add_pair_rule(
    p: argparse.ArgumentParser, per: str, pairs: tuple[int, int], fewest: str, min_effect: str
) -> None:
    """``--min-pairs`` and ``--max-pairs`` (``pairs``: their defaults; ``fewest``: the first's help,
    ``per`` cell or step) and ``--min-effect`` (``min_effect``: its help)."""
    p.add_argument("--min-pairs", type=int, default=pairs[0], help=f"{fewest}. Default: {pairs[0]}")
    p.add_argument(
        "--max-pairs", type=int, default=pairs[1], help=f"most pairs per {per}. Default: {pairs[1]}"
    )
    add_min_effect(p, PAIRED_MIN_EFFECT, min_effect)


def pair_rule(args: argparse.Namespace) -> Rule:
    """``--min-effect``, ``--min-pairs`` and ``--max-pairs`` as a decision rule (HarnessError if bad)."""
    try:
        return Rule(min_effect=args.min_effect, min_pairs=args.min_pairs, max_pairs=args.max_pairs)
    except ValueError as e:
        raise HarnessError(f"Received --min-effect/--min-pairs/--max-pairs: {e}.") from None


def add_envs(p: argparse.ArgumentParser, what: str) -> None:
    """``--envs DIR``: where ``what`` are installed and reused."""
    p.add_argument("--envs", default=ENVS, metavar="DIR", help=f"where {what}. Default: {ENVS}")


def add_measuring(
    p: argparse.ArgumentParser, sweep: str, results: str, budget: tuple[float, str] | None = None
) -> None:
    """A paired command's selection (:func:`add_selection_args`), ``--results`` (``results``: where
    its rows go), ``--wait-lock`` and ``--json``."""
    add_selection_args(p, sweep, writes_rows=True, budget=budget)
    p.add_argument("--results", default="results", help=f"results folder; {results}. Default: results")
    p.add_argument(
        "--wait-lock",
        action="store_true",
        help="when another run measures on this machine, wait for it to end (default: exit, naming it)",
    )
    add_json(p)


def paired(d: Decision, failure: str) -> Paired:
    """A decision B/A over pairs (and why there is none, if) as ``--json`` gives it."""
    return Paired(
        ratio=d.ratio, ci_low=d.low, ci_high=d.high, pairs=d.pairs, verdict=d.verdict, failure=failure
    )


def interrupt_on_sigterm() -> None:
    """A scheduler's or CI's SIGTERM stops the run like Ctrl-C: workers stopped, rows kept. Ctrl-C
    (SIGINT) is handled even when a wrapper started this process with SIGINT ignored (Python then
    installs no handler of its own)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def parse_env(flag: str, items: list[str]) -> tuple[tuple[str, str], ...]:
    """``--baseline-env``/``--candidate-env`` values as (key, value) pairs; HarnessError naming
    ``flag`` for an item that is not ``KEY=VALUE``."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HarnessError(f"Received {flag} {item!r}; expected KEY=VALUE, e.g. TF_ENABLE_ONEDNN_OPTS=0.")
        out.append((key, value))
    return tuple(out)
