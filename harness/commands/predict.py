"""``python -m harness predict``: throughput and efficiency at n devices of one node from a measured
1-device cell and the all-reduce cost (:mod:`harness.analysis.scale.scaling`), beside the measured figures
where the results hold them (across nodes: ``compare-links``). The flags become a :class:`harness.analysis.scale.scaling.Query` (:func:`query`);
the rows it scales and compares with are the query's baseline key's
(:func:`harness.analysis.scale.scaling.baseline_key`)."""

from __future__ import annotations

import argparse
import math
from typing import Any

import pandas as pd

from harness.analysis.run.tables import num, render_table
from harness.analysis.scale import scaling
from harness.analysis.scale.scaling_figure import prediction_figure
from harness.commands.output import CommandResult, add_json, say_wrote
from harness.commands.paths import add_figures, add_results_argument, out_folder, results_roots
from harness.commands.selection import int_list
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow
from harness.errors import HarnessError, require
from harness.results import history
from harness.spec.axes import AXIS_BY_NAME
from harness.spec.cell import Cell
from harness.spec.strategies import ALLREDUCE_STRATEGIES, STRATEGIES

NAME = "predict"

EXITS: dict[int, str] = {0: "the predictions printed", 2: "bad input or too few measured cells"}

CELL_DEFAULTS = {"loop": "ctl", "accum_steps": 1, "steps_per_execution": 10, "precision": "float32"}
"""The cell's axes predict takes a flag for (besides model, strategy and batch), with their defaults."""
MAX_DEVICES = 65536
"""The largest device count predict takes (the model's arithmetic stays in 64-bit floats)."""


def add_parser(sub: Any, summary: str) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary)
    add_results_argument(p, "the 1-device cell and the all-reduce times may come from different ones")
    p.add_argument(
        "--model",
        required=True,
        choices=("cnn", "dense"),
        help="the model of the measured 1-device cell scaled, and of the cells predicted",
    )
    grows = "; ".join(f"{s}: more --{STRATEGIES[s].device_axis}" for s in ALLREDUCE_STRATEGIES)
    p.add_argument(
        "--strategy", required=True, choices=ALLREDUCE_STRATEGIES, help=f"the strategy predicted ({grows})"
    )
    p.add_argument(
        "--replicas",
        default=None,
        metavar="LIST",
        help="mirrored: replica counts to predict, e.g. 1,2,4,8. Default: 1,2,3,4",
    )
    p.add_argument(
        "--workers",
        default=None,
        metavar="LIST",
        help="multi_worker_mirrored: worker counts to predict. Default: 1,2,3,4",
    )
    p.add_argument(
        "--op",
        default=None,
        help="cross-device op (mirrored) or communication (multi_worker_mirrored) whose "
        "all-reduce cost to use. Default: auto (mirrored), ring",
    )
    p.add_argument("--batch", type=int, default=64, help="per-replica batch of the cells. Default: 64")
    for name, default in CELL_DEFAULTS.items():
        axis = AXIS_BY_NAME[name]
        p.add_argument(
            axis.flag,
            type=type(default),
            default=default,
            choices=axis.choices if isinstance(default, str) else None,
            help=f"{axis.help}, as in the measured 1-device cell scaled. Default: {default}",
        )
    add_figures(p)
    add_json(p)
    return p


def query(args: argparse.Namespace) -> scaling.Query:
    """The flags, checked (HarnessError naming a bad one), as
    :func:`harness.analysis.scale.scaling.predictions`' query: the 1-device cell of the flags'
    configuration (the baseline key's axes predict has no flag for at their defaults: synthetic data,
    no XLA, the automatic loss, SGD, no co-tenants), the counts and the op."""
    for flag in ("--batch", "--accum-steps", "--steps-per-execution"):
        value = getattr(args, flag[2:].replace("-", "_"))
        require({flag: (value, value >= 1, "an integer >= 1")})
    axis, other = scaling.device_axes(args.strategy)
    if getattr(args, other) is not None:
        raise HarnessError(
            f"Received --{other} with --strategy {args.strategy}; expected "
            f"--{axis} (the axis this strategy grows)."
        )
    given = getattr(args, axis)
    counts = int_list(f"--{axis}", "1,2,3,4" if given is None else given, 1, MAX_DEVICES)
    op_column = STRATEGIES[args.strategy].option_axis
    assert op_column is not None  # ALLREDUCE_STRATEGIES have an option axis
    ops = AXIS_BY_NAME[op_column].choices
    accepted = f"one of {', '.join(ops)} ({op_column.replace('_', '-')} of {args.strategy})"
    require({"--op": (args.op, args.op is None or args.op in ops, accepted)})
    flags = {name: getattr(args, name) for name in CELL_DEFAULTS}
    config = Cell(model=args.model, strategy=args.strategy, batch=args.batch, **flags)
    return scaling.Query(config, tuple(counts), args.op or str(STRATEGIES[args.strategy].predict_option))


def _frame(found: scaling.Predictions) -> pd.DataFrame:
    """The lines as the table and the figure take them (one column per figure)."""
    return pd.DataFrame(
        [
            {
                "devices": line.prediction.devices,
                "predicted_examples_per_sec": line.prediction.examples_per_sec,
                "predicted_low": line.prediction.low,
                "predicted_high": line.prediction.high,
                "predicted_efficiency": line.prediction.efficiency,
                "allreduce_share": line.prediction.allreduce_share,
                "allreduce_from": line.prediction.allreduce_from,
                "measured_examples_per_sec": None if line.measured is None else line.measured.value,
                "measured_ci_low": None if line.measured is None else line.measured.low,
                "measured_ci_high": None if line.measured is None else line.measured.high,
                "error": line.error,
                "inside": line.inside,
            }
            for line in found.lines
        ]
    )


def _text(lines: pd.DataFrame) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    header = (
        "n",
        "predicted examples/s [95% interval]",
        "efficiency",
        "all-reduce share",
        "all-reduce from",
        "measured examples/s [95% CI]",
        "error",
        "inside",
    )
    rows: list[tuple[str, ...]] = [
        (
            str(r["devices"]),
            _ranged(r["predicted_examples_per_sec"], r["predicted_low"], r["predicted_high"]),
            num(r["predicted_efficiency"], ".2f"),
            num(r["allreduce_share"], ".0%"),
            str(r["allreduce_from"]),
            _ranged(r["measured_examples_per_sec"], r["measured_ci_low"], r["measured_ci_high"]),
            num(r["error"], "+.0%"),
            {True: "inside", False: "outside", None: "-"}[r["inside"]],
        )
        for r in lines.to_dict("records")
    ]
    return header, rows


def _ranged(value: float | None, low: float | None, high: float | None) -> str:
    """``value [low..high]`` in examples/s; the range left out where unknown."""
    known = low is not None and high is not None and not math.isnan(low + high)
    return num(value, ",.0f") + (f" [{num(low, ',.0f')}..{num(high, ',.0f')}]" if known else "")


def run(args: argparse.Namespace) -> CommandResult:
    q, roots = query(args), results_roots(args)
    cells, _ = history.load(roots)
    rows = unflatten_all(CellRow, cells.to_dict("records"))
    found = scaling.predictions(rows, q, history.load_table(roots, "collectives"), where=", ".join(roots))
    lines, cost = _frame(found), found.cost
    folder = out_folder(args, "--figures", "figures")
    title = (
        f"{args.model} {args.strategy} [{q.op}], batch "
        f"{args.batch} per replica, {args.loop}, accum {args.accum_steps}, spe "
        f"{args.steps_per_execution}"
    )
    print(render_table(*_text(lines), title=title))
    print(
        f"all-reduce cost: {cost.source}; alpha {cost.alpha_s * 1e6:.1f} us per ring step, "
        f"{cost.bandwidth_gbps:.3g} Gb/s per link"
        + (f", fit error {cost.rel_rms:.0%} RMS" if cost.rel_rms else "")
        + ". Model and assumptions: docs/how-to/hardware.md, 'Predict scaling from the all-reduce'."
    )
    print(found.method)
    paths = prediction_figure(lines, folder / (f"predict_{args.model}_{args.strategy}"), title)
    say_wrote(paths)
    figures = [str(p) for p in paths]
    return CommandResult(0, {"lines": lines.to_dict("records"), "method": found.method, "figures": figures})
