"""The report's scaling-model section: each multi-device cell beside its prediction, and the figure."""

from __future__ import annotations

from pathlib import Path

from harness.analysis.pages.report import write_report
from harness.results.store import read, read_cells
from tests.harness.commands.test_predict import _folder


def test_the_report_sets_measured_beside_predicted_when_collectives_exist(tmp_path: Path) -> None:
    results = _folder(tmp_path)
    cells = read_cells(results)
    cells.loc[cells["replicas"] == 2, "baseline_cell_id"] = "cnn/mirrored/r1w1"
    written = write_report(cells, tmp_path / "report", "t", read(results, "collectives"))
    names = [p.name for p in written]
    assert "predicted_vs_measured.png" in names and "predicted_vs_measured.svg" in names
    page = (tmp_path / "report" / "report.html").read_text()
    # 2 replicas: 2 x 10 ms on the shared cores + 1 ms measured gradient all-reduce
    assert "6,000 [5,800..6,200]" in page and f"{128 / 0.021:,.0f}" in page
    assert f"{(128 / 0.021 - 6000) / 6000:+.0%}" in page
    without = write_report(cells, tmp_path / "bare", "t", None)
    assert not any(p.name.startswith("predicted_vs_measured") for p in without)
    assert "run --sweep collectives" in (tmp_path / "bare" / "report.html").read_text()
