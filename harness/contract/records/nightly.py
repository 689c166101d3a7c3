"""The nightly table's row (:class:`NightlyRow`): one cell's night of ``nightly``, with what both
decisions said (:class:`ChangePoint`: rule (b)'s). Pure: no pyarrow, no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import CI, Col, Estimate
from harness.contract.records.shared import CellId, DeviceName, HostCpu, Status, SuiteVersion


@dataclass(frozen=True, kw_only=True)
class ChangePoint:
    """Rule (b) of ``nightly``: the change point it found tonight (every field None: none)."""

    change_point: Annotated[
        str | None,
        Col("", "Rule (b), when it found one tonight: the label of the first night after the change."),
    ] = None
    change_point_shift: Annotated[
        float | None, Col("1", "Rule (b): the level after the change over before.")
    ] = None
    change_point_p: Annotated[float | None, Col("1", "Rule (b): the permutation p-value.")] = None
    change_point_new: Annotated[
        bool | None, Col("", "Rule (b): a new alarm (False: rule (a) had flagged it on a night since).")
    ] = None


@dataclass(frozen=True, kw_only=True)
class NightlyRow:
    """One row of the nightly table: one cell's night of ``nightly`` (a point of its series), with
    what both decisions said that night (harness.analysis.versions.nightly). A series is the rows with equal
    ``series``: the same cell, machine and reference software (the reference's fingerprint), suite
    version and reference pin."""

    night_id: Annotated[
        str, Col("", "Id of the night (its pair rows are under nightly/cells, run_id = night_id).")
    ]
    timestamp: Annotated[str, Col("ISO 8601 UTC", "When the night ended.")]
    label: Annotated[
        str, Col("", "The night's --label: a commit, a date or a wheel version (default: the date).")
    ]
    cell_id: CellId
    series: Annotated[
        str | None,
        Col(
            "",
            "16-hex hash of cell_id, fingerprint, the suite's package version (bumped when what is measured "
            "changes; not the commit) and reference_pin: the series key.",
        ),
    ] = None
    suite_version: SuiteVersion
    fingerprint: Annotated[
        str | None, Col("", "Hardware/software fingerprint of the reference's processes (as in cells).")
    ] = None
    host_cpu: HostCpu = None
    device_name: DeviceName = None
    candidate: Annotated[str, Col("", "--candidate as given: a requirement spec or an interpreter path.")]
    reference: Annotated[str, Col("", "--baseline as given (the build compared against).")]
    candidate_versions: Annotated[
        str | None, Col("", "What the candidate resolved to: TensorFlow and Keras versions.")
    ] = None
    reference_versions: Annotated[str | None, Col("", "What the reference resolved to.")] = None
    reference_pin: Annotated[
        str | None,
        Col(
            "",
            "12-hex sha256 of the reference environment's `pip freeze` (its lock file, "
            "nightly/reference-<hash>.txt), or of the interpreter's when --baseline is a path.",
        ),
    ] = None
    status: Annotated[Status, Col("", "ok, or failed (reason says which side, which pair and why).")]
    reason: Annotated[str | None, Col("", "Why the cell has no point tonight.")] = None
    pairs: Annotated[
        int, Col("pairs", "Pairs of live candidate and reference processes (in turns) behind it.")
    ]
    ratio: Annotated[
        Estimate,
        Col(
            "1", "Candidate / reference throughput (examples/s): exp(mean over pairs of the pair log ratio)."
        ),
        CI("Lower end of the 95% CI of ratio (Student t over pairs)."),
    ] = Estimate()
    log_ratio_se: Annotated[float | None, Col("1", "Standard error of the mean pair log ratio.")] = None
    change: Annotated[
        Estimate,
        Col(
            "1", "Rule (a): tonight's ratio over its baseline's level (the reference's, 1, with no baseline)."
        ),
        CI("Lower end of rule (a)'s 95% CI of change."),
    ] = Estimate()
    verdict: Annotated[
        str | None,
        Col(
            "",
            "Rule (a), in the suite's four verdicts: lower (a regression alarm) or higher (an "
            "improvement: the CI wholly beyond min_effect of 1), equivalent (wholly within), "
            "undecided; or reverted (back at the level before the previous night's alarm).",
        ),
    ] = None
    baseline: Annotated[
        str | None, Col("", "Labels of rule (a)'s baseline nights, comma-separated (empty: the reference).")
    ] = None
    change_point: ChangePoint = ChangePoint()
    alarm: Annotated[
        str | None, Col("", "The new alarms tonight (regression, improvement), comma-separated.")
    ] = None
    min_effect: Annotated[float, Col("1", "Rule (a)'s F (--min-effect).")]
    budget_min: Annotated[float | None, Col("min", "The night's --budget-min.")] = None
