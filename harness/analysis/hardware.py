"""``python -m harness compare-hardware``: two or more machines, like for like, with cost.

Machines are fingerprints (see ``fingerprint`` in results/README.md). For each, the newest run on it
is used unless ``--runs`` names runs. The comparison is refused, saying what differs, unless every
machine ran the same suite version, TensorFlow and Keras. For every cell measured ok on the reference
machine and another: the ratio of throughputs with a 95% CI from Welch's t over independent
measurements (:func:`harness.formulas.stats.ratio`): each run's figure where both machines have
several runs of the cell, else the process figures of the newest run (column ``over``: runs or
processes), never pooled windows; its verdict is higher, lower, equivalent or undecided
(:mod:`harness.formulas.verdicts`). With a price table, examples per dollar:

- ``price_per_device_hour`` (renting): examples/s x 3600 / (price x device_count);
- ``purchase_price`` (buying, per device): examples/s per 1,000 of currency = 1000 x examples/s /
  (price x device_count).

Where rows carry ``energy_j_per_example`` (NVML, single-process GPU cells), examples per joule too.
A price table is CSV (``machine,price_per_device_hour,purchase_price``) or TOML
(``[machines."NVIDIA H100 80GB HBM3"] price_per_device_hour = 2.5``); ``machine`` matches a device
name or a fingerprint.
"""

from __future__ import annotations

import csv
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.analysis.findings import describe, figures
from harness.analysis.tables import render_table
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow
from harness.errors import HarnessError
from harness.formulas import stats

SOFTWARE = ("suite", "tf_version", "keras_version")

FOOTNOTE = (
    "ratio: median throughput / the reference machine's; 95% CI from Welch's t on the log "
    "figures of both machines, over their runs where each machine ran the cell at least "
    "twice, else over the newest run's processes (column 'over'); a CI reaching 1, or "
    "within 5% of it, reads equivalent, one beyond 1 by 5% or more higher or lower, else "
    "undecided. examples/$ = examples/s x 3600 / "
    "(price per device-hour x devices)."
)
"""What the table's ratio and cost columns are (printed under it): exactly what
:func:`evidence_ratio` and :func:`compare_machines` compute."""

PRICE_FIELDS = ("price_per_device_hour", "purchase_price")


@dataclass(frozen=True)
class Price:
    price_per_device_hour: float | None = None
    purchase_price: float | None = None


def read_prices(path: Path) -> dict[str, Price]:
    """machine (device name or fingerprint) -> Price; HarnessError on a malformed table."""
    try:
        if path.suffix == ".toml":
            table = tomllib.loads(path.read_text()).get("machines", {})
            items = [(name, values) for name, values in table.items()]
        else:
            with open(path, newline="") as f:
                items = [(r["machine"], r) for r in csv.DictReader(f)]
        return {
            name: Price(*(float(v[k]) if v.get(k) not in (None, "") else None for k in PRICE_FIELDS))
            for name, v in items
        }
    except (OSError, KeyError, ValueError, TypeError, tomllib.TOMLDecodeError) as e:
        raise HarnessError(
            f"cannot read the price table {path} ({type(e).__name__}: {e}); expected CSV with "
            'columns machine,price_per_device_hour,purchase_price or TOML [machines."NAME"] '
            "tables with those keys"
        ) from None


def software_differences(rows: pd.DataFrame) -> list[str]:
    """What differs in suite version, TensorFlow or Keras between the machines (empty: alike)."""
    sw = rows.assign(suite=rows["suite_version"].astype("string").fillna("").str.split("+").str[0])
    out = []
    for col in SOFTWARE:
        values = sw.groupby("fingerprint")[col].agg(lambda s: ",".join(sorted(set(map(str, s)))))
        if values.nunique() > 1:
            out.append(f"{col}: " + "; ".join(f"{str(fp)[:10]} {v}" for fp, v in values.items()))
    return out


def compare_machines(ok: pd.DataFrame, prices: dict[str, Price] | None = None) -> pd.DataFrame:
    """One row per (cell, machine) of the measured rows ``ok`` (status ok, of the runs compared):
    throughput, ratio to the reference machine (the first fingerprint by device name) with its
    95% CI, and examples per dollar / joule where known."""
    if ok["fingerprint"].nunique() < 2:
        raise HarnessError(
            f"the runs given hold {ok['fingerprint'].nunique()} machine fingerprint(s); "
            "compare-hardware needs two or more (use --runs to name runs from each machine)"
        )
    differs = software_differences(ok)
    if differs:
        raise HarnessError("refusing to compare unlike software: " + " | ".join(differs))
    machines = ok.drop_duplicates("fingerprint").sort_values("device_name")
    reference = machines["fingerprint"].iloc[0]
    prices = prices or {}
    out = []
    for (cell_id, fp), g in ok.groupby(["cell_id", "fingerprint"]):
        row = g.iloc[-1]
        ref = ok[(ok["cell_id"] == cell_id) & (ok["fingerprint"] == reference)]
        ratio = lo = hi = None
        over = verdict = ""
        if not ref.empty and fp != reference:
            r, over = evidence_ratio(g, ref)
            ratio, lo, hi, verdict = r.value, r.low, r.high, describe(r)
        price = prices.get(str(row["device_name"])) or prices.get(str(fp)) or Price()
        devices = int(row["device_count"]) if pd.notna(row["device_count"]) else 1
        eps = float(row["examples_per_sec"])
        energy = row.get("energy_j_per_example")
        out.append(
            {
                "cell_id": cell_id,
                "machine": f"{row['device_name']} x{devices}",
                "fingerprint": fp,
                "examples_per_sec": eps,
                "ratio_to_reference": ratio,
                "ratio_ci_low": lo,
                "ratio_ci_high": hi,
                "over": over,
                "verdict": verdict,
                "examples_per_dollar": (
                    eps * 3600 / (price.price_per_device_hour * devices)
                    if price.price_per_device_hour
                    else None
                ),
                "examples_per_sec_per_1000_purchase": (
                    1000 * eps / (price.purchase_price * devices) if price.purchase_price else None
                ),
                "examples_per_joule": (
                    1 / float(energy)
                    if energy is not None and pd.notna(energy) and float(energy) > 0
                    else None
                ),
                "total_replicas": int(row["replicas"] * row["workers"]),
                "model": row["model"],
                "strategy": row["strategy"],
                "scaling_efficiency": row.get("scaling_efficiency"),
            }
        )
    return pd.DataFrame(out).sort_values(["cell_id", "machine"]).reset_index(drop=True)


def evidence_ratio(candidate: pd.DataFrame, reference: pd.DataFrame) -> tuple[stats.Ratio, str]:
    """Candidate / reference throughput of one cell and what its CI is over: the run figures when
    both machines ran it at least twice, else the newest runs' process figures."""
    if len(candidate) >= 2 and len(reference) >= 2:
        return stats.ratio(list(candidate["examples_per_sec"]), list(reference["examples_per_sec"])), "runs"
    return stats.ratio(figures(_newest(candidate)), figures(_newest(reference))), "processes"


def _newest(rows: pd.DataFrame) -> CellRow:
    """The last row."""
    (row,) = unflatten_all(CellRow, rows.iloc[-1:].to_dict("records"))
    return row


def text_table(table: pd.DataFrame) -> str:
    def fmt(x: object, spec: str) -> str:
        return "-" if x is None or (isinstance(x, float) and pd.isna(x)) else format(x, spec)

    lines: list[tuple[str, ...]] = [
        (
            "cell",
            "machine",
            "examples/s",
            "vs reference [95% CI]",
            "over",
            "examples/$",
            "ex/s per 1000 purchase",
            "examples/J",
        )
    ]
    for r in table.itertuples():
        ratio = r.ratio_to_reference
        ci = "reference" if ratio is None or (isinstance(ratio, float) and pd.isna(ratio)) else str(r.verdict)
        lines.append(
            (
                str(r.cell_id),
                str(r.machine),
                fmt(r.examples_per_sec, ",.0f"),
                ci,
                str(r.over or "-"),
                fmt(r.examples_per_dollar, ",.0f"),
                fmt(r.examples_per_sec_per_1000_purchase, ",.1f"),
                fmt(r.examples_per_joule, ",.1f"),
            )
        )
    return render_table(lines[0], lines[1:])
