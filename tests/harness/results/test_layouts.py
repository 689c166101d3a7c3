"""Older results read as today's (:mod:`harness.results.layouts`): a file without a layout version
(layout 0) read through :mod:`harness.results.store` gives today's records; today's files carry
their layout and are read as written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.analysis.comparisons import machines
from harness.contract.columns import unflatten_all
from harness.contract.machine import MachineFacts
from harness.contract.records import CellRow, CostRow, NightlyRow, RatioRow
from harness.results import store
from harness.results.layouts import LAYOUT, LAYOUT_KEY
from harness.results.store import NIGHTLY_FOLDER, RunFiles

RUN = RunFiles(Path("."), "2026-11-20", "20261120T000000Z-abcdef")


def _old(root: Path, table: str, row: dict[str, object], folder: Path | None = None) -> None:
    """One row as an older suite wrote it: only its own columns, no layout in the schema."""
    path = (folder or RunFiles(root, RUN.date, RUN.run_id).folder(table)) / "00000.parquet"
    store.write_atomic(pa.Table.from_pylist([row]), path)


OLD_CELL = {
    "run_id": RUN.run_id,
    "cell_id": "cnn/old",
    "status": "ok",
    "model": "cnn",
    "strategy": "default",
    "optimizer": "SGD(learning_rate=0.01)",
    "device_kind": "CPU",
    "device_name": "cpu",
    "host_cpu": "AMD EPYC",
    "host_cores": 2,
}


def test_an_old_cells_row_reads_as_today_s_record(tmp_path: Path) -> None:
    _old(tmp_path, "cells", OLD_CELL)
    (row,) = unflatten_all(CellRow, store.read_cells(tmp_path).to_dict("records"))
    assert row.cell.optimizer == "sgd" and row.cell.xla == "off" and row.cell.loss == "auto"
    assert row.cell.cross_device_ops == "none" and row.ran.nodes == 1 and row.run.protocol_version == 1
    facts = MachineFacts.from_json(row.run.machine_facts or "")
    assert facts == MachineFacts(cpu_model="AMD EPYC", cores=2, partial=True)
    assert row.run.machine == facts.default_name == MachineFacts(cpu_model="AMD EPYC", cores=2).default_name
    (machine,) = machines.identify([row])
    assert machine.facts.partial and machine.name == row.run.machine


def test_an_old_ab_row_gets_the_rule_ab_judged_with_then(tmp_path: Path) -> None:
    _old(tmp_path, "cells", OLD_CELL | {"ab_id": "x", "ab_side": "A", "ab_pair": 0}, tmp_path / "cells")
    df = store.read_cells(tmp_path)
    assert df.loc[0, "ab_min_effect"] == 0.02 and df.loc[0, "ab_min_pairs"] == 5


def test_old_ratios_costs_and_nightly_rows_read_as_today_s(tmp_path: Path) -> None:
    _old(tmp_path, "ratios", {"run_id": RUN.run_id, "relation": "scaling", "subject": "a", "reference": "b"})
    (ratio,) = unflatten_all(RatioRow, store.read(tmp_path, "ratios").to_dict("records"))
    assert ratio.min_effect == 0.05 and ratio.run.protocol_version == 1
    _old(tmp_path, "costs", {"run_id": RUN.run_id, "wall_s": 10.0})
    (cost,) = unflatten_all(CostRow, store.read(tmp_path, "costs").to_dict("records"))
    assert cost.breakdown_s == 0.0 and cost.breakdowns == 0
    points = tmp_path / NIGHTLY_FOLDER / "points"
    for i, word in enumerate(("regression", "improvement", "no change", "undecided")):
        _old(tmp_path, "points", {"cell_id": f"c{i}", "verdict": word, "min_effect": 0.02}, points / str(i))
    nights = unflatten_all(NightlyRow, store.read_nightly(tmp_path).to_dict("records"))
    assert [n.verdict for n in nights] == ["lower", "higher", "equivalent", "undecided"]


def test_today_s_files_carry_their_layout_and_read_as_written(tmp_path: Path) -> None:
    path = RunFiles(tmp_path, RUN.date, RUN.run_id).folder("cells") / "00000.parquet"
    store.write_atomic(pa.Table.from_pylist([{"cell_id": "new"}], schema=store.TABLES["cells"].schema), path)
    assert pq.read_schema(path).metadata[LAYOUT_KEY] == str(LAYOUT).encode()
    _old(tmp_path, "cells", OLD_CELL, tmp_path / "cells" / "old")
    df = store.read_cells(tmp_path)
    assert len(df) == 2 and df["nodes"].isna().sum() == 1  # today's row: nodes as written


def test_an_old_row_keeps_its_values_and_its_inapplicable_one(tmp_path: Path) -> None:
    # mirrored on one replica stored cross_device_ops "none": no op on one device, kept as stored
    _old(tmp_path, "cells", {**OLD_CELL, "strategy": "mirrored", "cross_device_ops": "none", "xla": "on"})
    (row,) = unflatten_all(CellRow, store.read_cells(tmp_path).to_dict("records"))
    assert row.cell.cross_device_ops == "none" and row.cell.xla == "on"
