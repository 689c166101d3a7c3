"""The ratios table's row (:class:`RatioRow`): one comparison of a run, measured in turns. Pure: no
pyarrow, no pandas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from harness.contract.columns import CI, Col, Estimate
from harness.contract.records.shared import RunFingerprint, RunInfo
from harness.spec.groups import COMPARES, Relation
from harness.spec.protocol import DEFAULT_MIN_EFFECT

_RELATION = (
    "What the ratio compares: " + ", ".join(f"{r.value} ({text})" for r, text in COMPARES.items()) + "."
)
"""The ``relation`` column's description: every :class:`Relation` and what it compares."""


@dataclass(frozen=True, kw_only=True)
class RatioRow:
    """One row of the ratios table: one comparison of a run, measured in turns (``run``, ``ab``).

    Formulas (harness.formulas.turns): in each block of an instance, a member's throughput is its
    examples over its seconds in its two turns of the block; the block's log ratio is log(subject /
    reference) of those; the instance's log ratio is the mean over its blocks; the ratio is
    exp(mean over instances) x scale, its CI a Student-t over instances."""

    run: RunInfo = RunInfo()
    fingerprint: RunFingerprint = None
    relation: Annotated[Relation, Col("", _RELATION)]
    subject: Annotated[str, Col("", "cell_id of the numerator (ab: 'B:' + cell_id).")]
    reference: Annotated[str, Col("", "cell_id of the denominator (ab: 'A:' + cell_id).")]
    group: Annotated[str, Col("", "The group whose instances measured it (g0, g1, ... ; r0, ... races).")]
    ratio: Annotated[
        Estimate,
        Col(
            "1",
            "exp(mean over instances of the instance log ratio) x scale: subject / reference "
            "throughput (examples/s), from adjacent turns of live processes.",
        ),
        CI("Lower end of the 95% CI: Student-t over instances of the mean log ratio, x scale."),
    ] = Estimate()
    scale: Annotated[float, Col("1", "Factor applied to the throughput ratio (scaling: 1 / devices).")]
    instances: Annotated[int, Col("instances", "Completed group instances (fresh processes) behind it.")]
    blocks: Annotated[int, Col("blocks", "Blocks of turns per instance.")]
    turn_s: Annotated[float, Col("s", "Target length of one turn (a timed window).")]
    min_effect: Annotated[
        float, Col("1", "The smallest change the verdict calls (run --min-effect; ab --min-effect).")
    ] = DEFAULT_MIN_EFFECT
    sd_between: Annotated[
        float | None, Col("log", "Standard deviation of the instance log ratios (ddof 1).")
    ] = None
    sd_within: Annotated[
        float | None, Col("log", "Pooled standard deviation of block log ratios inside instances.")
    ] = None
    p_value: Annotated[
        float | None, Col("1", "Two-sided one-sample t-test of mean instance log ratio = 0.")
    ] = None
    verdict: Annotated[
        str,
        Col(
            "",
            "higher, lower, equivalent, undecided, or not measured (no instance; the note says why): "
            "higher/lower only when the Benjamini-Hochberg procedure over the run's comparisons (false "
            "discovery rate 5%) rejects its p-value, its CI excludes 1 and it differs from 1 by at least the "
            "minimum effect (min_effect: run --min-effect, 5% by default; ab --min-effect); equivalent "
            "when its CI lies inside [1/(1 + min_effect), 1 + min_effect] (no difference of min_effect "
            "or more); else undecided. For a scaling efficiency the verdict is on the "
            "speed-up (ratio / scale against 1).",
        ),
    ]
    decided: Annotated[
        bool,
        Col(
            "",
            "True when the verdict is higher, lower or equivalent (more instances "
            "would not change the verdict's kind).",
        ),
    ]
    extra_instances: Annotated[
        int | None,
        Col(
            "instances",
            "Further instances likely to decide it at the measured spread (0: decided, or decided on its own "
            "and held back by the false-discovery control).",
        ),
    ] = None
    extra_s: Annotated[
        float | None, Col("s", "Those instances' likely wall time (the extra budget to decide it).")
    ] = None
    dropped_instances: Annotated[
        int, Col("instances", "Instances of its group dropped (a member failed or a deadline passed).")
    ]
    note: Annotated[
        str,
        Col(
            "",
            "Why the comparison was not measured in turns (empty when it was): e.g. its group's "
            "members did not fit in the GPUs' memory together, so they ran one after another and the "
            "cell rows' ratios come from separately measured processes.",
        ),
    ]
    disturbed_blocks: Annotated[
        int,
        Col(
            "blocks",
            "Blocks of its group's instances left out of the ratio because in one of their turns "
            "something other than the member (another process, the hypervisor's steal) used more "
            "than a quarter of a CPU: the host's busy CPU time (/proc/stat) during the turn less "
            "the member's own CPU time.",
        ),
    ]
