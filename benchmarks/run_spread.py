"""The run-to-run calibration set (benchmarks/run-spread/) read into the variance model of
:mod:`harness.formulas.across_runs`: :func:`derive` fits it, :func:`literal` writes the fit as the
``CALIBRATION`` constant's source. ``python -m benchmarks.run_spread`` prints that source;
``benchmarks/test_run_spread.py`` checks the constant against the set and the CIs against the set's
pairs and rungs."""

from __future__ import annotations

import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from harness.analysis.comparisons import across
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, Status
from harness.formulas.across_runs import SHIFT, RunSpread, Sums, between, fit
from harness.results import history

SET = Path(__file__).parent / "run-spread" / "set.toml"


PLAIN = "{model}/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak"
"""The plain custom loop's cell id, the configuration benchmarks/plain_loop.py writes by hand."""


@dataclass(frozen=True)
class Rung:
    """A run under a CPU quota of ``cpus`` CPUs beside the A/A runs of ``machine``, and the plain
    script's ratio quota / whole per model (benchmarks/plain_cpu_halved.py's ratio of geometric
    means over fresh processes in ABBA pairs)."""

    machine: str
    cpus: float
    rows: tuple[CellRow, ...]
    script: dict[str, float]


def script_ratios(summary: Path) -> dict[str, float]:
    """Model -> quota / whole from a plain_cpu_halved.py summary."""
    models = json.loads(summary.read_text())["models"]
    return {m: float(v["halved_over_full"]["ratio_of_geomeans"]) for m, v in models.items()}


def rows(pack: Path) -> list[CellRow]:
    """The ok rows with a figure of one pack (one run)."""
    cells, _ = history.load([pack])
    found = unflatten_all(CellRow, cells.to_dict("records"))
    return [r for r in found if r.status == Status.OK and r.examples_per_sec.value]


def read(path: Path = SET) -> tuple[dict[str, list[list[CellRow]]], list[Rung]]:
    """The set: machine -> its A/A runs' rows (one list per run), and the rungs."""
    spec = tomllib.loads(path.read_text())
    aa = {e["machine"]: [rows(path.parent / p) for p in e["packs"]] for e in spec.get("aa", [])}
    rungs = [
        Rung(
            e["machine"],
            float(e["cpus"]),
            tuple(rows(path.parent / e["pack"])),
            script_ratios(path.parent / e["script"]),
        )
        for e in spec.get("rung", [])
    ]
    return aa, rungs


def derive(path: Path = SET) -> RunSpread:
    """The spread fitted on the set's A/A runs, every machine pooled."""
    aa, _ = read(path)
    return sum((fit(across.runs_of([r for run in runs for r in run])) for runs in aa.values()), RunSpread())


def literal(s: RunSpread) -> str:
    """``CALIBRATION = RunSpread(...)``, the constant's source."""
    parts = "".join(
        f"        ({name!r}, Sums({x.ss:.6g}, {x.noise:.6g}, {x.df:.6g})),\n" for name, x in s.parts
    )
    hours = f"({s.apart[0]:.3g}, {s.apart[1]:.3g})"
    return f"CALIBRATION = RunSpread(\n    (\n{parts}    ),\n    {s.pairs},\n    {s.machines},\n    {s.dates!r},\n    {hours},\n)"


SCALES = (
    (0.0, 0.75, "back to back"),
    (0.75, 2.0, "about an hour apart"),
    (2.0, 1e9, "about three hours apart"),
)
"""Time scales of A/A pairs (hours apart): the components are fitted on each scale's pairs."""


def sd_ci(x: Sums) -> str:
    """A component's standard deviation with its 95% CI from the chi-square of its df (log units
    as %)."""
    if not x.df:
        return "-"
    v = x.variance
    low, high = (x.df * v / stats.chi2.ppf(q, x.df) for q in (0.975, 0.025))
    return f"{v**0.5:.1%} [{low**0.5:.1%}, {high**0.5:.1%}] ({x.df:.0f} df)"


def components() -> list[str]:
    """The fitted components at each time scale, every machine's pairs pooled."""
    aa, _ = read()
    lines = [
        "| time scale | pairs | run-wide shift | one process (G + usual noise) | several processes | parameter server |"
    ]
    lines.append("|---|---|---|---|---|---|")
    for low, high, name in SCALES:
        fitted = RunSpread()
        for runs in aa.values():
            for a, b in itertools.combinations(runs, 2):
                pair = fit(across.runs_of([*a, *b]))
                if low <= pair.apart[0] < high:
                    fitted = fitted + pair
        lumped = [
            sd_ci(Sums(g.ss, 0.0, g.df))
            for g in (fitted.part(between(k)) for k in (across.ONE, across.SEVERAL, across.PS))
        ]
        lines.append(
            f"| {name} | {fitted.pairs} | {sd_ci(fitted.part(SHIFT))} | " + " | ".join(lumped) + " |"
        )
    return lines


if __name__ == "__main__":
    print(literal(derive()))
    print("\n".join(["", *components()]))
