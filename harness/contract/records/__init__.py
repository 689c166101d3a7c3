"""The typed records that cross the process boundary and land in ``results/``: one row of each
table, one module per table (the cells table's groups in modules by theme), and what several
tables share; the schema's one definition (:mod:`harness.contract.columns`). Fields typed without
``| None`` are set in every stored row of that table. Pure: no pyarrow, no pandas.

Every public name is importable from here (``from harness.contract.records import CellRow``)."""

from harness.contract.records.cells import AbInfo, Axes, CellRow
from harness.contract.records.collectives import CollectiveRow
from harness.contract.records.costs import CostRow
from harness.contract.records.efficiency import Efficiency, Flops, Updates, Utilization
from harness.contract.records.nightly import ChangePoint, NightlyRow
from harness.contract.records.ratios import RatioRow
from harness.contract.records.readings import Breakdown, Checks, Energy, Memory
from harness.contract.records.shared import Machine, Resumes, RunInfo, Status
from harness.contract.records.tenancy import Foreign, Tenancy
from harness.contract.records.timing import Execution, Spread, Timing
from harness.contract.records.windows import WindowRow

__all__ = [
    "AbInfo",
    "Axes",
    "Breakdown",
    "CellRow",
    "ChangePoint",
    "Checks",
    "CollectiveRow",
    "CostRow",
    "Efficiency",
    "Energy",
    "Execution",
    "Flops",
    "Foreign",
    "Machine",
    "Memory",
    "NightlyRow",
    "RatioRow",
    "Resumes",
    "RunInfo",
    "Spread",
    "Status",
    "Tenancy",
    "Timing",
    "Updates",
    "Utilization",
    "WindowRow",
]
