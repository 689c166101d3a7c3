"""What ``--json`` prints: one JSON object on stdout per command (the human-readable output goes to
stderr then). Every object has ``command`` and ``exit_code``, and ``error`` where the command
stopped on bad input; the rest is the command's own, typed here and listed in results/README.md.
Numbers that are not finite print as null."""

from __future__ import annotations

import json
import math
from typing import Any, TypedDict


class ListedCell(TypedDict):
    cell_id: str
    unsupported: str | None
    """Why TensorFlow cannot run it here; null: it runs."""


class ListOutput(TypedDict):
    sweep: str
    platform: str
    cells: list[ListedCell]


class RunOutput(TypedDict):
    run_id: str
    written: list[str]
    """The results folders written (cells, windows, ratios, costs)."""
    counts: dict[str, int]
    """Cells by status."""
    failed: list[str]
    """Ids of the cells that failed or ran wrongly (what makes exit code 1)."""
    cells: list[dict[str, Any]]
    """The cell rows, as the cells table's columns."""
    ratios: list[dict[str, Any]]
    """The comparisons measured in turns, as the ratios table's columns."""


class CheckOutput(TypedDict):
    results: str
    files: int
    damaged: list[str]
    notes: list[str]


class SeriesOutput(TypedDict):
    cell_id: str
    fingerprint: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    z: float | None
    history: int
    change: str


class CompareOutput(TypedDict):
    candidate_runs: list[str]
    baseline_runs: list[str]
    series: list[SeriesOutput]


class Paired(TypedDict):
    """B against A over pairs of processes (``ab``'s cells, ``bisect``'s steps)."""

    ratio: float | None
    """Candidate / baseline throughput (B / A), geometric mean over pairs."""
    ci_low: float | None
    ci_high: float | None
    pairs: int
    verdict: str
    failure: str
    """Why there is no verdict (empty when there is one)."""


class PairedCell(Paired):
    cell_id: str


class AbOutput(TypedDict):
    ab_id: str
    verdict: str
    written: list[str]
    cells: list[PairedCell]


class NightlyOutput(TypedDict):
    night_id: str
    label: str
    verdict: str
    written: list[str]
    points: list[dict[str, Any]]
    """Tonight's point per cell, as the nightly table's columns."""


class BisectStep(Paired):
    """A step; its ``verdict``: lower, higher, equivalent, undecided (endpoints, final); slow, fast,
    undecided (midpoint)."""

    kind: str
    """endpoints, midpoint or final."""
    build: str
    """Side B, e.g. ``tf-nightly-cpu==2.21.0.dev20251014``."""
    against: str
    """Side A."""


class BisectOutput(TypedDict):
    folder: str
    outcome: str
    """found, no slowdown, undecided, failed, or not finished."""
    good: str
    """The newest build known fast (found: the one before the slowdown)."""
    bad: str
    """The oldest build known slow (found: the one that brought it)."""
    good_git: str | None
    """``tf.version.GIT_VERSION`` of ``good``."""
    bad_git: str | None
    steps: list[BisectStep]
    skipped: dict[str, str]
    """Builds that did not install or import -> why."""


class HardwareOutput(TypedDict):
    baseline: str
    """The reference machine's name."""
    min_effect: float
    machines: list[dict[str, Any]]
    """Each machine: name, facts, peaks (per compute dtype its runs trained in: dtype, flops's value,
    low, high in FLOP/s; float32 first), runs, why (how it was told apart)."""
    models: list[dict[str, Any]]
    """Per model: each machine's best (figure with its CI, the run-to-run basis, its cell's precision),
    the leader and its ratios, the same configuration's ratios, costs (USD per million examples and
    per epoch), no_bf16 (CPU machines whose runs never trained it in mixed bfloat16 although their
    CPU has bfloat16 units, or recorded no flags: machine, units, trained precisions)."""
    rows: list[dict[str, Any]]
    """Every configuration both the machine and the reference measured: figure and ratio."""
    prices: dict[str, float]
    """Machine -> USD per instance-hour."""
    peaks: list[dict[str, Any]]
    """Each other machine's peak in peak_dtype against the reference's: ratio, verdict."""
    peak_dtype: str
    """The compute dtype whose peaks are compared: float32 where every machine measured it."""
    leaders: dict[str, str]
    """Model -> the machine with the highest figure at its best (see each model's verdicts)."""
    verdicts_from: dict[str, float]


class LinksOutput(TypedDict):
    settings: list[dict[str, Any]]
    """Each link setting: label, gbps (the median measured link, Gbit/s), runs, links (each run's)."""
    configurations: list[dict[str, Any]]
    """Each multi-node configuration: cell_id, model, strategy, title, nodes, workers, the answer in
    words, where predict is right, predict's basis, and each setting's point (figure with its CI,
    ratio over the slowest with CI and verdict, all-reduce time, predict's figure and error)."""
    min_effect: float
    error_band: float
    """Predict counts as right within this relative error (0.15: +-15%)."""
    left_out: list[str]
    figures: list[str]


class PredictOutput(TypedDict):
    lines: list[dict[str, Any]]
    """Each device count: devices, predicted_examples_per_sec with its 95% interval predicted_low,
    predicted_high, efficiency, all-reduce share and source, the measured figure with its CI, the
    error and whether it lies inside the interval."""
    method: str
    """How each interval was taken: the 1-device step's CI, the all-reduce fit, the model error."""
    figures: list[str]


OUTPUTS: dict[str, tuple[type, str]] = {
    "run": (RunOutput, "the run's rows: each cell, its status, and the comparisons in turns"),
    "list": (ListOutput, "the selection's cells and which are unsupported here"),
    "check": (CheckOutput, "what reading a results folder found"),
    "compare": (CompareOutput, "the gate's verdict per series"),
    "ab": (AbOutput, "each cell's paired ratio, its CI and verdict, and the overall verdict"),
    "nightly": (NightlyOutput, "tonight's point per cell and the night's verdict"),
    "bisect": (BisectOutput, "the two builds the slowdown lies between, every step's ratio and verdict"),
    "compare-hardware": (
        HardwareOutput,
        "which machine trains each model fastest: machines, answers, ratios, costs",
    ),
    "predict": (
        PredictOutput,
        "each device count's prediction with its 95% interval, beside what was measured",
    ),
    "compare-links": (
        LinksOutput,
        "what a faster link between nodes buys: settings, each configuration's points and predict's error",
    ),
}
"""Command -> (its object's type, what it holds). Every object also has ``command``, ``exit_code``
and, on bad input, ``error``."""


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, inf), at any depth, as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dumps(obj: dict[str, Any]) -> str:
    """The object as strict JSON (no NaN), on one line; values JSON has no type for as strings."""
    return json.dumps(_finite(obj), default=str, allow_nan=False)
