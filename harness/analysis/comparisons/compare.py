"""``python -m harness compare``: the nightly regression gate over the results history, one series
per cell id x fingerprint x machine (:mod:`harness.analysis.comparisons.machines`), judged by
:mod:`harness.analysis.comparisons.gate` (docs/explanation/statistics.md, "compare"; exit codes:
:data:`harness.commands.compare.EXITS`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from harness.analysis.comparisons import across, gate, machines
from harness.analysis.comparisons.gate import GatePolicy, SeriesVerdict
from harness.analysis.run import plots, render
from harness.analysis.run.tables import render_table
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, Status
from harness.errors import EXIT_SHORT_HISTORY
from harness.formulas import across_runs
from harness.formulas.verdicts import EQUIVALENT, HIGHER, LOWER, UNDECIDED

NOW_FAILING = "now failing"


@dataclass(frozen=True)
class GateResult:
    """The gate's result: verdicts per series, the runs compared, and cells that broke."""

    candidate_runs: list[str]
    baseline_runs: list[str]
    verdicts: list[SeriesVerdict]
    broken: list[tuple[str, str, str]] = field(default_factory=list)
    """(cell_id, status, reason) of cells ok in the baseline and not ok in the candidate."""
    policy: GatePolicy = GatePolicy()
    history_runs: int = 0
    """Runs in the whole history (every fingerprint), for the not-enough-history sentence."""

    @property
    def exit_code(self) -> int:
        if self.broken:
            return gate.EXIT_REGRESSION
        return gate.exit_code(self.verdicts)

    @property
    def shortfall(self) -> str:
        """Why no series could be judged (exit 3): how many runs there are and how many are needed."""
        need = self.policy.min_history
        best = max((v.history for v in self.verdicts), default=0)
        cand = len(self.candidate_runs)
        total = f"{self.history_runs} run" + ("" if self.history_runs == 1 else "s")
        return (
            f"not enough history: the results hold {total} ({cand} candidate, "
            f"{len(self.baseline_runs)} baseline before it); judging a cell needs "
            f"{need} baseline runs of it on the same machine fingerprint ({need + cand} runs in "
            f"all with the candidate), and the best-covered cell has {best}. Run the suite "
            f"{need - best} more time(s), widen --baseline or lower --min-history."
        )


def compare(
    cells: pd.DataFrame,
    candidate: list[str],
    baseline: list[str],
    history_runs: int,
    policy: GatePolicy = GatePolicy(),
) -> GateResult:
    """Judge every series of the ``candidate`` runs against the ``baseline`` runs (ids, resolved
    by :func:`harness.results.history.select_comparison`; ``history_runs``: runs in the whole
    history) (see the module docstring)."""
    chosen = cells[cells["run_id"].isin([*candidate, *baseline])].sort_values("timestamp")
    rows = unflatten_all(CellRow, chosen.to_dict("records"))  # oldest first
    names = _names(rows)

    def series(r: CellRow) -> tuple[str, str | None, str]:
        return r.cell.cell_id, r.machine.fingerprint if r.machine else None, names[r.run.run_id]

    mine_by: dict[tuple[str, str | None, str], list[CellRow]] = {}
    history_of: dict[tuple[str, str | None, str], list[CellRow]] = {}  # series with a fingerprint
    by_machine: dict[str, list[CellRow]] = {}
    for r in (r for r in rows if r.status == Status.OK and r.examples_per_sec.value is not None):
        key = series(r)
        if r.run.run_id in candidate:
            mine_by.setdefault(key, []).append(r)
        elif key[1]:
            history_of.setdefault(key, []).append(r)
            by_machine.setdefault(key[2], []).append(r)
    spreads = {m: across.spread([past]) for m, past in by_machine.items()}
    compared = sum(1 for k in mine_by if k in history_of)
    verdicts = []
    for key, mine in sorted(mine_by.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        (cell_id, fingerprint, machine), past = key, history_of.get(key, [])
        verdict = gate.judge_series(
            cell_id,
            fingerprint or "",
            [across.run_figure(r) for r in mine],
            [across.run_figure(r) for r in past],
            compared,
            policy,
            spreads.get(machine, across_runs.CALIBRATION),
            across.kind(mine[0]),
        )
        verdicts.append(replace(verdict, machine=machine))
    broken = [
        (r.cell.cell_id, str(r.status), r.reason or "")
        for r in rows
        if r.run.run_id in candidate
        and r.status in (Status.FAILED, Status.INVALID)
        and series(r) in history_of
    ]
    return GateResult(candidate, baseline, verdicts, broken, policy, history_runs)


def _names(rows: list[CellRow]) -> dict[str, str]:
    """Run id -> the name of the machine that measured it (:func:`machines.identify` over one row
    per run: a row with the float32 peak where there is one)."""
    first: dict[str, CellRow] = {}
    for r in sorted(rows, key=lambda r: r.peak.peak_dtype != "float32"):
        first.setdefault(r.run.run_id, r)
    return {run: m.name for m in machines.identify(list(first.values())) for run in m.run_ids}


def machine_names(cells: pd.DataFrame) -> dict[str, str]:
    """:func:`_names` of the table's rows."""
    return _names(unflatten_all(CellRow, cells.to_dict("records")))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{(x - 1) * 100:+.1f}%"


def _rows(result: GateResult) -> list[tuple[str, ...]]:
    order = {LOWER: 0, HIGHER: 1, UNDECIDED: 2, gate.SHORT_HISTORY: 3, gate.NEW: 4, EQUIVALENT: 5}
    out: list[tuple[str, ...]] = []
    for v in sorted(result.verdicts, key=lambda v: (order[v.change], v.cell_id)):
        ci = "-" if v.ci_low is None else f"{_pct(v.ci_low)}..{_pct(v.ci_high)}"
        base = "-" if v.baseline is None else f"{v.baseline:,.0f}"
        z = "-" if v.z is None else f"{v.z:+.1f}"
        detectable = "-" if v.detectable is None else f"{v.detectable:.0%}"
        figures = (f"{v.candidate:,.0f}", base, _pct(v.ratio), ci, z, detectable, f"{v.runs}/{v.history}")
        out.append((v.change, v.cell_id, *figures))
    out.extend(
        (NOW_FAILING, cell_id, status, "-", "-", "-", "-", "-", reason[:80])
        for cell_id, status, reason in result.broken
    )
    return out


HEADER = (
    *("change", "cell", "examples/s", "baseline", "change %", "CI (corrected)", "robust z", "detectable"),
    "runs cand/base",
)


def _counts(result: GateResult) -> str:
    counts: dict[str, int] = {}
    for v in result.verdicts:
        counts[v.change] = counts.get(v.change, 0) + 1
    if result.broken:
        counts[NOW_FAILING] = len(result.broken)
    return ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "nothing to compare"


def _method(result: GateResult) -> str:
    p = result.policy
    return (
        f"One observation per run: the median of its timed windows. Lower (a regression) or "
        f"higher only when the ratio of the candidate's to the baseline's median run moves by at least "
        f"{p.min_effect:.0%}, its bootstrap CI over runs (Bonferroni-corrected over the compared "
        f"series, family-wise alpha {p.alpha:g}) excludes 1, and the robust z-score against the "
        f"series' history (median/MAD, at least {p.min_history} runs) passes {p.z_threshold:g}. "
        f"'detectable': the smallest change caught with {p.power:.0%} probability at this "
        f"series' noise; gate on several candidate runs (--candidate last:N) to shrink it. "
        f"Otherwise equivalent when the CI lies within {p.min_effect:.0%} of 1, else undecided."
    )


def text_table(result: GateResult) -> str:
    """The printed table: changes first."""
    return "\n".join(
        [
            render_table(HEADER, _rows(result)),
            "",
            (
                f"candidate {', '.join(result.candidate_runs)} vs "
                f"{len(result.baseline_runs)} baseline run(s): {_counts(result)}."
            ),
            _method(result),
        ]
    )


def markdown(result: GateResult) -> str:
    """A CI comment: verdict, counts, the changed series as a table, and the method."""
    return render.markdown(
        "compare.md",
        result=result,
        counts=_counts(result),
        shortfall=result.shortfall if result.exit_code == EXIT_SHORT_HISTORY else "",
        header=HEADER,
        rows=[r for r in _rows(result) if r[0] not in (EQUIVALENT, UNDECIDED)],
        method=_method(result),
    )


MAX_SERIES_FIGURES = 12


def series_figures(cells: pd.DataFrame, result: GateResult, out: Path) -> list[Path]:
    """For each changed series of a :class:`GateResult` (at most 12): its run
    medians over time with CI whiskers, the candidate highlighted, change points as dashed lines."""
    plt = plots.pyplot()
    changed = [v for v in result.verdicts if v.change in (LOWER, HIGHER)]
    paths: list[Path] = []
    for n, v in enumerate(changed[:MAX_SERIES_FIGURES]):
        s = cells[
            (cells["cell_id"] == v.cell_id)
            & (cells["fingerprint"] == v.fingerprint)
            & (cells["status"] == Status.OK)
        ].sort_values("timestamp")
        x = list(range(len(s)))
        y = s["examples_per_sec"].astype(float).to_numpy()
        fig, ax = plt.subplots(figsize=(8, 3.6))
        err = plots.whiskers(s, "examples_per_sec")
        ax.errorbar(x, y, yerr=[e.to_numpy() for e in err], fmt="o-", capsize=2, label="run median (95% CI)")
        cand = [i for i, r in enumerate(s["run_id"]) if r in result.candidate_runs]
        ax.plot(cand, y[cand], "o", color="red", markersize=9, label=f"candidate: {v.change}")
        for k in gate.change_points(y.tolist()):
            ax.axvline(k - 0.5, color="gray", linestyle="--", linewidth=1)
        ax.set_xticks(x, [str(t)[:10] for t in s["timestamp"]], rotation=60, fontsize=7)
        ax.set_ylabel("examples/s")
        said = f"{v.cell_id}\n{v.change}: {(v.ratio or 1) - 1:+.1%}, z {v.z:+.1f}; dashed: change points"
        ax.set_title(said, fontsize=8)
        ax.legend(fontsize=7)
        paths += plots.save(fig, out, f"series_{n:02d}_{v.change.replace(' ', '_')}")
    return paths
