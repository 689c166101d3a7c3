"""The run-to-run calibration set (benchmarks/run-spread/) read into the variance model of
:mod:`harness.formulas.across_runs`: :func:`derive` fits it, :func:`literal` writes the fit as the
``CALIBRATION`` constant's source. ``python -m benchmarks.run_spread`` prints that source;
``benchmarks/test_run_spread.py`` checks the constant against the set and the CIs against the set's
pairs and rungs."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.analysis import across
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, Status
from harness.formulas.across_runs import Spread, fit
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


def derive(path: Path = SET) -> Spread:
    """The spread fitted on the set's A/A runs, every machine pooled."""
    aa, _ = read(path)
    return sum((fit(across.runs_of([r for run in runs for r in run])) for runs in aa.values()), Spread())


def literal(s: Spread) -> str:
    """``CALIBRATION = Spread(...)``, the constant's source."""
    parts = "".join(
        f"        ({name!r}, Sums({x.ss:.6g}, {x.noise:.6g}, {x.df:.6g})),\n" for name, x in s.parts
    )
    hours = f"({s.apart[0]:.3g}, {s.apart[1]:.3g})"
    return f"CALIBRATION = Spread(\n    (\n{parts}    ),\n    {s.pairs},\n    {s.machines},\n    {s.dates!r},\n    {hours},\n)"


if __name__ == "__main__":
    print(literal(derive()))
