"""compare-hardware over two real machines' `nox -s bench` runs (docs/evidence): two VMs sold as
"AMD EPYC", 2 cores each, one more than twice as fast as the other."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from harness.analysis import hardware, hardware_text, machines
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow, RatioRow
from harness.errors import HarnessError
from harness.formulas import stats
from harness.formulas.verdicts import HIGHER, LOWER, UNDECIDED, equivalent, judge

EVIDENCE = Path(__file__).resolve().parents[3] / "docs" / "evidence"
RUNS = (EVIDENCE / "2026-11-27-answer-first" / "results.tgz", EVIDENCE / "2026-11-28-machines" / "epyc-b.tgz")


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[CellRow], list[RatioRow]]:
    from harness.results import history

    roots = []
    for i, tgz in enumerate(RUNS):
        root = tmp_path_factory.mktemp(f"m{i}")
        with tarfile.open(tgz) as tar:
            tar.extractall(root, filter="data")
        roots.append(next(root.rglob("cells")).parent)
    cells, _ = history.load(roots)
    ratios = history.load_ratios(roots)
    return unflatten_all(CellRow, cells.to_dict("records")), unflatten_all(
        RatioRow, ratios.to_dict("records")
    )


def test_the_two_epyc_vms_are_two_machines_told_apart_by_their_peaks(two) -> None:
    rows, _ = two
    found = machines.identify(rows)
    assert [m.name.rsplit(", ", 1)[1] for m in found] == ["peak 193 GFLOP/s", "peak 458 GFLOP/s"]
    assert all("do not overlap" in m.why for m in found)


def test_the_faster_vm_is_decided_faster_for_each_model_and_costs_less(two) -> None:
    rows, ratios = two
    found = machines.identify(rows)
    slow, fast = found
    c = hardware.compare(found, rows, ratios, prices={slow.name: 0.10, fast.name: 0.10})
    assert c.baseline == slow.name
    for a in c.models:
        assert a.leader == fast.name and [v.verdict for v in a.leads] == [HIGHER]
        assert 1.7 < a.leads[0].ratio.value < 2.6
        assert a.costs[fast.name].per_million.value < a.costs[slow.name].per_million.value
        assert a.epoch_examples == 60_000
    text = hardware_text.text(c)
    assert re.search(r"trains it fastest, at 2\.\d\dx the speed of", text)
    assert "not measurable here" in text and "$0.10/hour" in text
    data = json.loads(json.dumps(hardware_text.to_json(c)))
    assert data["leaders"] == {"cnn": fast.name, "dense": fast.name}
    html = hardware_text.render_html(c)
    assert "<h2>Which machine trains each model fastest</h2>" in html and "&#39;" in html


def test_the_reference_is_the_users_and_decides_the_direction(two) -> None:
    rows, ratios = two
    found = machines.identify(rows)
    c = hardware.compare(found, rows, ratios, baseline=found[1].name)
    assert {v.verdict for r in c.rows if (v := r.versus) is not None} <= {LOWER, "undecided"}


def test_bad_names_and_prices_name_the_fix(two) -> None:
    rows, ratios = two
    found = machines.identify(rows)
    with pytest.raises(HarnessError, match="--baseline='nope': it names no machine"):
        hardware.compare(found, rows, ratios, baseline="nope")
    with pytest.raises(HarnessError, match="--prices='nope'"):
        hardware.compare(found, rows, ratios, prices={"nope": 1.0})
    with pytest.raises(HarnessError, match="needs two or more"):
        hardware.compare(found[:1], rows, ratios)
    with pytest.raises(HarnessError, match="expected NAME=USD"):
        hardware.parse_price("fast=-1")
    with pytest.raises(HarnessError, match=r"cannot read the price file p\.csv"):
        hardware.parse_price_table("a,b\n1,2\n", "p.csv")
    assert hardware.parse_price_table('[machines."a b"]\nusd_per_hour = 2.5\n', "p.toml") == {"a b": 2.5}


@pytest.mark.parametrize("m", [hardware.MIN_EFFECT, stats.MIN_EFFECT])
def test_the_footnote_states_the_band_the_verdicts_apply(m: float) -> None:
    words = hardware_text.verdict_rule(m)
    low, high = (float(x) for x in re.search(r"inside \[(\d\.\d+), (\d\.\d+)\]", words).groups())  # type: ignore[union-attr]
    assert f"{high:.3f} or more or {low:.3f} or less" in words
    assert equivalent(low + 5e-4, high - 5e-4, m)  # a CI just inside the stated band
    assert not equivalent(low - 1e-3, 1.0, m) and not equivalent(1.0, high + 1e-3, m)
    assert judge(high + 5e-4, high + 4e-4, high + 6e-4, m) == HIGHER  # just beyond the stated edge
    assert judge(low - 5e-4, low - 6e-4, low - 4e-4, m) == LOWER
    assert judge(high - 1e-3, high - 2e-3, high + 1e-2, m) == UNDECIDED  # excludes 1, short of the edge


def test_the_pages_footnote_is_the_rule_at_the_comparisons_min_effect(two) -> None:
    rows, ratios = two
    c = hardware.compare(machines.identify(rows), rows, ratios)
    assert c.min_effect == hardware.MIN_EFFECT
    assert hardware_text.verdict_rule(c.min_effect) in hardware_text.method(c)
    assert "[0.909, 1.100]" in hardware_text.text(c)
